"""The old home of the trigger budget (before issue 33): `imad.decide.budget` holds it now.

Kept because callers import it (`from imad.router.budget import TriggerBudget`, as the
recorded-decisions test of issue 21 does); new code imports `imad.decide`.
"""

from __future__ import annotations

from imad.decide.budget import BudgetStats, TriggerBudget

__all__ = ["BudgetStats", "TriggerBudget"]
