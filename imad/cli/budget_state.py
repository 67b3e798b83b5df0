"""`imad ask --budget-state FILE`: a trigger budget that outlives the process.

`imad ask` answers one question and exits, so a budget held in memory would never leave its
warm-up (the checkpoint's τ for the first 50 answers): the budget's window is read from FILE
before the question and written back after it (JSON, `TriggerBudget.state_dict()`), so a shell
loop or a cron job of `imad ask` calls spends the budget like one long-running pipeline.

The file is written atomically (a temporary file, then a rename), so an interrupted run leaves
the previous state; a file that is not a budget state is refused before any LLM call and left as
it is. Two `imad ask` processes sharing one file at the same moment are not coordinated: the
last to finish wins and the other's answer is missing from the window (use `imad serve`, which
holds one budget for all its requests, for concurrent traffic).
"""

from __future__ import annotations

import json
from pathlib import Path

from imad.cli.common import flag_error
from imad.errors import ConfigError
from imad.pipeline import new_budget
from imad.router.budget import TriggerBudget
from imad.router.checkpoint import write_atomic
from imad.routing_options import DEFAULT_BUDGET_WINDOW


def budget_from_flags(rate: float | None, window: int | None, state: Path | None,
                      initial_threshold: float) -> TriggerBudget | None:
    """The budget `imad ask`'s flags ask for: loaded from `state` when that file exists, new
    otherwise; None without `--target-trigger-rate` and `--budget-state`."""
    if state is None:
        if rate is not None or window is not None:
            raise ConfigError("--budget-state", "imad ask answers one question per process, so a "
                              "budget needs a file to remember the earlier answers: add "
                              "--budget-state FILE (or use `imad serve` / `Pipeline`, which keep "
                              "it in memory)")
        return None
    if not state.exists():
        if rate is None:
            raise ConfigError("--target-trigger-rate", f"{state} does not exist yet: give the "
                              "target rate of the new budget")
        try:
            return new_budget(rate, DEFAULT_BUDGET_WINDOW if window is None else window,
                              initial_threshold)
        except ConfigError as error:
            raise flag_error(error) from None
    budget = read_budget(state)
    for flag, given, saved in (("--target-trigger-rate", rate, budget.target_rate),
                               ("--budget-window", window, budget.window)):
        if given is not None and given != saved:
            raise ConfigError(flag, f"{given} differs from the {saved} saved in {state}; drop the "
                              "flag, or start a new budget with another --budget-state file")
    return budget


def read_budget(path: Path) -> TriggerBudget:
    """The budget saved in `path`; `ConfigError` (naming --budget-state) if it is not one."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError("--budget-state", f"cannot read a budget state from {path}: {error}") from None
    try:
        return TriggerBudget.from_state_dict(state)
    except ConfigError as error:
        raise ConfigError("--budget-state", f"{path} is not a trigger budget state ({error})") from None


def write_budget(budget: TriggerBudget, path: Path) -> None:
    """Save the budget's state to `path` atomically."""
    write_atomic(path, (json.dumps(budget.state_dict()) + "\n").encode("utf-8"))
