"""Deciding, without torch: score → calibrate → **decide**.

The router (`imad.router`, torch) scores an answer into a `RouterScore`; everything after that
lives here and imports numpy at most, so a caller that only decides — a policy, a trigger
budget, a server's settings, a decision log — never loads the network:

- `score`: `RouterScore`, what the scorer says about one answer (no τ), its `Cue`s, and the OOD
  flag rule.
- `decision`: `RouterDecision`, the verdict and its reasons; the fail-safe decisions.
- `policy`: `Policy`, `FixedThreshold`, the checkpoint's τ and OOD policy turned into a policy
  (`checkpoint_policy`), the one choice of τ (`chosen_threshold`); τ's range rule `check_tau`.
- `budget`, `split_heaps`: `TriggerBudget`, a τ that follows the traffic (`new_budget`).
- `budget_state`: a trigger budget kept in a file between processes (`imad ask --budget-state`).
- `schema`: every field of a decision declared once, and the views derived from it.
- `certify` (imported on its own): a τ certified on labelled answers to keep at most α wrong
  with confidence 1 − δ, the infeasible answer, and the live check of the promise.

Arrows run one way: `imad.router` imports this package (a score is built there), never the
reverse (what deciding reads of the router's config is a protocol, `policy.StoredRouting`).
"""

from __future__ import annotations

from imad.decide.budget import BudgetStats, TriggerBudget, new_budget
from imad.decide.decision import RouterDecision
from imad.decide.policy import (
    FixedThreshold,
    Policy,
    ThresholdRule,
    as_policy,
    checkpoint_policy,
    checkpoint_threshold,
    choose_policy,
    chosen_threshold,
)
from imad.decide.schema import OUTCOMES, TAU_SOURCES
from imad.decide.score import Cue, RouterScore, unparsed_score
from imad.routing_options import check_tau

__all__ = [
    "OUTCOMES",
    "TAU_SOURCES",
    "BudgetStats",
    "Cue",
    "FixedThreshold",
    "Policy",
    "RouterDecision",
    "RouterScore",
    "ThresholdRule",
    "TriggerBudget",
    "as_policy",
    "check_tau",
    "checkpoint_policy",
    "checkpoint_threshold",
    "choose_policy",
    "chosen_threshold",
    "new_budget",
    "unparsed_score",
]
