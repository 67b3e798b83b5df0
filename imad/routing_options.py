"""The choices and defaults of routing under drift (issue 16), importable without torch.

`imad serve`'s settings and every CLI's `--help` need them before any model is loaded, and the
`imad.router` package imports torch, so they live here; `imad.router` and `imad.pipeline` use
these same values.
"""

from __future__ import annotations

from imad.constraints import Real

OOD_POLICIES = ("flag", "escalate")
"""What an answer unlike the training rows does: "flag" reports it, "escalate" also debates it."""

DEFAULT_BUDGET_WINDOW = 500
"""Answers a trigger budget looks back over (`--budget-window`)."""

MAX_BUDGET_WINDOW = 1_000_000
"""Largest window a trigger budget accepts (τ costs O(log window); memory grows with it)."""

DEFAULT_WARM_UP = 50
"""Scores a budget sees before its quantile replaces the router's τ (fewer with a smaller window)."""

TRIGGER_RATE = Real(0.0, 1.0, closed="neither")
"""A target trigger rate's row: the share of answers escalated, strictly between 0 and 1 (a trigger
budget's `target_rate`, `imad calibrate --target-trigger-rate`)."""

RECALIBRATION_METHODS = ("auto", "platt", "isotonic", "temperature", "base-rate", "prior-shift")
"""`imad calibrate --recalibrate` choices: `auto` (the default: the base rate unless Platt or
isotonic beats it beyond chance), four kinds fitted on labelled answers, prior-shift label-free."""
