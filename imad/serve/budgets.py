"""One trigger budget per served model name: `imad serve --target-trigger-rate R`.

Each model name (`imad`, `imad-svrmad`, `imad-acemad-0.6`, …) is its own traffic with its own
debate cost, so each gets its own `TriggerBudget`, created on its first request with that name's
τ (the suffix, `--tau` or the checkpoint's) as the warm-up τ. All requests of a name share the
budget (it is thread-safe) as its policy's threshold rule, and `GET /v1/imad/stats` reports each
one's τ and realized rate.
A τ suffix can be any number, so the book holds at most `MAX_BUDGETS` names with a suffix; a
request for one more is refused (400) rather than letting a client grow the server's memory
without bound. The server's own names (`imad`, `imad-acemad`, `imad-svrmad`) do not count
against the cap: they always get a budget, however many suffixed names came first.
"""

from __future__ import annotations

import threading
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from imad.decide import TriggerBudget, chosen_threshold, new_budget
from imad.errors import ServeError
from imad.serve.openai.model_names import ModelChoice, listed_model_names

if TYPE_CHECKING:
    from imad.router import Router

MAX_BUDGETS = 64


class BudgetBook:
    """The server's budgets, by model name."""

    def __init__(self, target_rate: float, window: int, router: Router) -> None:
        self.target_rate = target_rate
        self.window = window
        self.router = router
        self._budgets: dict[str, TriggerBudget] = {}
        self._lock = threading.Lock()

    def budget_for(self, choice: ModelChoice) -> TriggerBudget:
        """The budget of `choice`'s model name, made on first use."""
        name = choice.name.strip()
        with self._lock:
            budget = self._budgets.get(name)
            if budget is None:
                own = set(listed_model_names())
                if name not in own and len(self._budgets.keys() - own) >= MAX_BUDGETS:
                    raise ServeError(400, f"this server already keeps trigger budgets for "
                                          f"{MAX_BUDGETS} model names; use one of "
                                          f"{', '.join(sorted(self._budgets)[:5])}…",
                                     code="too_many_budgets", param="model")
                initial = chosen_threshold(self.router.config, choice.tau)
                budget = self._budgets[name] = new_budget(self.target_rate, self.window, initial)
            return budget

    def stats(self) -> dict[str, Any]:
        """Each budget's τ, window and realized rate, by model name (sorted)."""
        with self._lock:
            budgets = dict(self._budgets)
        return {name: asdict(budgets[name].stats()) for name in sorted(budgets)}
