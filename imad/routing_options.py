"""The choices and defaults of routing under drift, importable without torch.

`imad serve`'s settings and every CLI's `--help` need them before any model is loaded, and the
router's network and config import torch, so they live here; `imad.router`, `imad.decide` and
`imad.pipeline` use these same values. τ's one range rule (`Tau`, `check_tau`) lives here too:
a checkpoint's config (`imad.router.config`) and every policy (`imad.decide`) check τ with it,
and the config imports nothing from the policy side.
"""

from __future__ import annotations

from dataclasses import dataclass

from imad.constraints import Real, check_value

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

@dataclass(frozen=True)
class Tau(Real):
    """τ's row in a constraints table: a finite number in [0, 1] (0: never escalate a scored
    answer, 1: always escalate), stored as a float; booleans, strings and integers too large for
    a float are refused."""

    low: float = 0.0
    high: float = 1.0

    def __str__(self) -> str:
        return "a number in [0, 1]"


TAU = Tau()


def check_tau(value: object, field: str = "tau") -> float:
    """`value` as a float τ (`Tau`), or a `ConfigError` naming `field` (a CLI passes its flag,
    e.g. "--tau"). The one range check of τ in the runtime: the checkpoint's `threshold.tau`, a
    `FixedThreshold`, `imad ask --tau`, `imad serve --tau`, a model-name suffix and every τ a
    threshold rule returns go through it."""
    return check_value(value, TAU, field)
