"""An escalation budget: a threshold τ that follows the traffic so the trigger rate holds.

A τ chosen once on validation data does not transfer: on this repository's own numbers a τ
calibrated for a 6% escalation rate escalated 32% of MedQA answers. `TriggerBudget` keeps the
router's scores of the last `window` answers and sets τ to their `target_rate` quantile, so the
share of answers escalated (p < τ) stays at the budget whatever the score distribution drifts to.

Choices the issue left open (issue 16, item 1):
- **Quantile definition: `numpy.quantile(..., method="inverted_cdf")`** (Hyndman & Fan type 1),
  the smallest window score whose empirical CDF reaches the level. τ is then always an observed
  score, and because the answer being decided is already in the window, `p < τ` escalates the
  `ceil(level · m) − 1` lowest of the window's m scores: never more than the target share of the
  window, at most one answer (1/m) fewer. The interpolating definitions would put τ between two
  scores and escalate one more answer than the budget in about half the windows.
- **Unparsed answers count against the budget.** They always escalate and each one
  costs a debate like any other, so a budget that ignored them would overspend by their share
  (11.5% of the embedded model's GSM8K answers are unparsed). `observe_unparsed()` puts them in the
  window without a score; τ is then the quantile of the parsed scores at the level
  `(target · n − u) / (n − u)` (n answers in the window, u of them unparsed), so unparsed plus
  scored escalations add up to the target. This is the rule `imad calibrate` already applies
  when it chooses a static τ. When unparsed answers alone reach the target, τ is 0 and no parsed
  answer escalates; the realized rate then exceeds the target, and `stats()` shows it.
- **Warm-up.** Until `min_observations` scores are in the window τ is `initial_threshold` (the
  pipeline passes its checkpoint's τ). Without one, the budget uses its quantile from the first
  score on, since it has nothing better.

Scores are kept twice: in arrival order (a deque, to know which one leaves the window) and in
`imad.decide.split_heaps.SplitHeaps`, two heaps split at τ's rank, so an update and τ cost O(log
window) (amortised): measured flat from window 200 to 100,000 (benchmarks/bench_budget.py). A
sorted list kept with `bisect` was faster at small windows (observe alone, CPU time: 2.0 vs 3.5
µs at window 500) but grows with the window, since each insert and delete moves up to `window`
pointers (15 vs 3.2 µs at 100,000); `sortedcontainers` is not a core dependency.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from imad.constraints import Boolean, InstanceOf, Integer, Items, Real, check_value, show
from imad.decide.policy import FIXED_SOURCE, FixedThreshold
from imad.decide.split_heaps import SplitHeaps
from imad.errors import ConfigError
from imad.routing_options import DEFAULT_WARM_UP, MAX_BUDGET_WINDOW, TRIGGER_RATE, check_tau

QUANTILE_METHOD = "inverted_cdf"
"""The `numpy.quantile` method τ equals (module docstring)."""

STATE_VERSION = 1
"""Version of the `state_dict()` layout; `load_state_dict` refuses others."""


@dataclass(frozen=True)
class BudgetStats:
    """What a budget reports (e.g. in a server's /health): its settings, τ and the realized rate."""

    target_rate: float
    window: int
    threshold: float | None
    """τ for the next answer; None before the first score when there is no initial τ."""
    from_budget: bool
    """True once τ is the window's quantile, False while it is still the initial τ."""
    answers_in_window: int
    unparsed_in_window: int
    realized_rate: float | None
    """Share of the window's answers that escalated (unparsed included); None when empty."""
    observed_total: int
    """Answers observed since the budget was created (or since the state it loaded)."""


class TriggerBudget:
    """Holds a target escalation rate by setting τ to a quantile of the recent scores."""

    def __init__(self, target_rate: float, window: int = 500, min_observations: int = 50,
                 initial_threshold: float | None = None,
                 initial_source: str = "checkpoint") -> None:
        self.target_rate = check_value(target_rate, TRIGGER_RATE, "target_rate",
                                       advice="it is the share of answers to escalate")
        self.window = check_value(window, COUNT, "window")
        self.min_observations = check_value(min_observations, COUNT, "min_observations")
        if self.min_observations > self.window:
            raise ConfigError("min_observations", f"must not exceed window ({self.window}), got "
                              f"{min_observations}: the window could never hold that many scores")
        self.initial_threshold = (None if initial_threshold is None  # a τ: τ's one range check
                                  else check_tau(initial_threshold, "initial_threshold"))
        self.initial_source = check_value(initial_source, FIXED_SOURCE, "initial_source")
        """Where the warm-up τ came from ("checkpoint" or "request"): a decision made with it
        names that source, one made with the window's quantile names "budget"."""
        self._lock = threading.Lock()
        self._arrivals: deque[tuple[float | None, bool]] = deque()
        """(score or None when unparsed, escalated) per answer, oldest first."""
        self._scores = SplitHeaps()
        self._escalated = 0
        self._unparsed = 0
        self._observed_total = 0

    # --- observing -----------------------------------------------------------------------------

    def observe(self, p: float) -> float:
        """Record a router score and return the τ to decide this answer with (escalate if p < τ).

        Observing and choosing τ happen under one lock, so concurrent callers each get the τ
        that includes their own score; the escalation is counted in the realized rate.
        """
        return self.observe_with_source(p)[0]

    def observe_with_source(self, p: float) -> tuple[float, bool]:
        """`observe(p)`, and whether that τ is the window's quantile (False: the warm-up's
        initial τ), read under the same lock, for a decision that records where τ came from."""
        score = check_value(p, SCORE, "p", advice=NON_FINITE_SCORE)
        with self._lock:
            self._append(score, False)
            threshold = cast(float, self._current_threshold())  # not None: p is in the window
            if score < threshold:
                self._arrivals[-1] = (score, True)
                self._escalated += 1
            return threshold, self._from_budget()

    def observe_unparsed(self) -> tuple[float | None, bool]:
        """Record an answer that could not be scored: it escalates and uses up budget.

        Returns τ after it and whether that τ is the window's quantile, like `observe_with_source`.
        """
        with self._lock:
            self._append(None, True)
            return self._current_threshold(), self._from_budget()

    def threshold_for(self, p: float | None) -> tuple[float, str]:
        """A policy's threshold rule (`imad.decide.Policy`): observe the answer (None: unscored,
        observed as unparsed) and return τ for it and its source ("budget" once τ is the
        window's quantile, `initial_source` during the warm-up). Before any score, a budget
        without an initial τ reports τ 1 for an unscored answer, which escalates anyway."""
        if p is None:
            tau, from_budget = self.observe_unparsed()
            tau = 1.0 if tau is None else tau
        else:
            tau, from_budget = self.observe_with_source(p)
        return tau, "budget" if from_budget else self.initial_source

    # --- reading -------------------------------------------------------------------------------

    @property
    def threshold(self) -> float | None:
        """τ for the next answer (module docstring); None before any score without an initial τ."""
        with self._lock:
            return self._current_threshold()

    def stats(self) -> BudgetStats:
        """A consistent snapshot of τ, the window and the realized trigger rate."""
        with self._lock:
            answers = len(self._arrivals)
            return BudgetStats(
                target_rate=self.target_rate,
                window=self.window,
                threshold=self._current_threshold(),
                from_budget=self._from_budget(),
                answers_in_window=answers,
                unparsed_in_window=self._unparsed,
                realized_rate=self._escalated / answers if answers else None,
                observed_total=self._observed_total,
            )

    def quantile_level(self) -> float:
        """The level of the parsed scores' quantile that τ is: the target, corrected for the
        unparsed answers in the window (module docstring)."""
        with self._lock:
            return self._level()

    # --- persistence ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The settings and the window, as JSON-serialisable values (for a restart)."""
        with self._lock:
            return {
                "version": STATE_VERSION,
                "target_rate": self.target_rate,
                "window": self.window,
                "min_observations": self.min_observations,
                "initial_threshold": self.initial_threshold,
                "observed_total": self._observed_total,
                "answers": [[score, escalated] for score, escalated in self._arrivals],
            }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the window with a saved one; the settings stay this budget's.

        The state is recent traffic, so a budget with another target or window may load it:
        only the newest `window` answers are kept. Everything is checked before anything
        changes, so a malformed state raises `ConfigError` naming the key and leaves the budget
        as it was.
        """
        answers, observed_total = _check_state(state)
        answers = answers[-self.window:]
        with self._lock:
            self._arrivals = deque(answers)
            self._scores = SplitHeaps(score for score, _ in answers if score is not None)
            self._escalated = sum(escalated for _, escalated in answers)
            self._unparsed = sum(score is None for score, _ in answers)
            self._observed_total = max(observed_total, len(answers))

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> TriggerBudget:
        """A budget with the saved settings and window."""
        check_value(state, STATE, "state_dict")
        for key in ("target_rate", "window", "min_observations", "initial_threshold"):
            if key not in state:
                raise ConfigError(f"state_dict.{key}", "missing")
        budget = cls(state["target_rate"], window=state["window"],
                     min_observations=state["min_observations"],
                     initial_threshold=state["initial_threshold"])
        budget.load_state_dict(state)
        return budget

    def __repr__(self) -> str:
        stats = self.stats()
        return (f"TriggerBudget(target_rate={self.target_rate}, window={self.window}, "
                f"threshold={stats.threshold}, realized_rate={stats.realized_rate})")

    # --- internals (called with the lock held) -------------------------------------------------

    def _warmed_up(self) -> bool:
        return len(self._scores) >= self.min_observations

    def _from_budget(self) -> bool:
        return self._warmed_up() or (self.initial_threshold is None and len(self._scores) > 0)

    def _level(self) -> float:
        answers, unparsed = len(self._arrivals), self._unparsed
        if unparsed == 0:
            return self.target_rate
        if unparsed == answers:
            return 0.0
        return max((self.target_rate * answers - unparsed) / (answers - unparsed), 0.0)

    def _current_threshold(self) -> float | None:
        if not self._warmed_up() and self.initial_threshold is not None:
            return self.initial_threshold
        if not len(self._scores):
            return None
        level = self._level()
        if level <= 0.0:
            return 0.0  # the unparsed answers use up the budget: escalate no scored answer
        return self._scores.kth(_inverted_cdf_index(len(self._scores), level))

    def _append(self, score: float | None, escalated: bool) -> None:
        if len(self._arrivals) == self.window:
            self._evict()
        self._arrivals.append((score, escalated))
        if score is None:
            self._unparsed += 1
        else:
            self._scores.add(score)
        self._escalated += escalated
        self._observed_total += 1

    def _evict(self) -> None:
        score, escalated = self._arrivals.popleft()
        self._escalated -= escalated
        if score is None:
            self._unparsed -= 1
        else:
            self._scores.remove(score)


def _inverted_cdf_index(n: int, level: float) -> int:
    """The sorted position `numpy.quantile(x, level, method="inverted_cdf")` returns.

    Written with numpy's own float steps (virtual index n·level − 1, rounded up when it has a
    fractional part) so τ equals numpy's value bit for bit.
    """
    virtual = n * level - 1.0
    below = math.floor(virtual)
    index = below + 1 if virtual - below > 0 else below
    return min(max(index, 0), n - 1)


BUDGET_ARGUMENTS = {"target_rate": "target_trigger_rate", "window": "budget_window"}
"""The `TriggerBudget` field each budget argument sets, as errors name them."""


def new_budget(target_trigger_rate: float, window: int, initial: FixedThreshold, *,
               names: Mapping[str, str] = BUDGET_ARGUMENTS) -> TriggerBudget:
    """A trigger budget that starts from the `initial` τ (the request's or the checkpoint's,
    `imad.decide.chosen_threshold`, whose source the warm-up decisions name) until its window
    holds min(50, window // 2) scores (half a small window, so a few unparsed answers in it do
    not send it back to the initial τ). A bad value raises `ConfigError` naming the argument as
    `names` spells it (a CLI passes its flags). `imad serve`'s budgets and `imad ask
    --budget-state` both start here."""
    try:
        return TriggerBudget(target_trigger_rate, window=window,
                             min_observations=max(1, min(DEFAULT_WARM_UP, window // 2)),
                             initial_threshold=initial.tau, initial_source=initial.source)
    except ConfigError as error:
        field = names.get(error.field, error.field)
        raise ConfigError(field, str(error).removeprefix(f"{error.field}: ")) from None


MAX_OBSERVED_TOTAL = 2**63 - 1
"""Bound on `observed_total` in a state: a count of answers, never near it (a 5,000-digit one is
damage, and Python cannot even print it)."""

COUNT = Integer(1, MAX_BUDGET_WINDOW)
"""`window` and `min_observations`."""
SCORE = Real(0.0, 1.0)
NON_FINITE_SCORE = "a non-finite p escalates as unparsed (observe_unparsed), never into the window"
STATE = InstanceOf(dict, "a dict (TriggerBudget.state_dict())")
ANSWERS = InstanceOf(list, "a list of [score or null, escalated]")
ANSWER = Items((None, SCORE), Boolean())
"""One answer of a saved window: [score, or null when unparsed; escalated]."""
OBSERVED_TOTAL = Integer(0, MAX_OBSERVED_TOTAL)


def _check_state(state: Any) -> tuple[list[tuple[float | None, bool]], int]:
    check_value(state, STATE, "state_dict")
    if state.get("version") != STATE_VERSION:
        raise ConfigError("state_dict.version", f"expected {STATE_VERSION}, got "
                          f"{show(state.get('version'))}; the state was written by another imad version")
    answers: list[tuple[float | None, bool]] = []
    for position, entry in enumerate(check_value(state.get("answers"), ANSWERS, "state_dict.answers")):
        field = f"state_dict.answers[{position}]"
        score, escalated = check_value(entry, ANSWER, field)
        if score is None and not escalated:
            raise ConfigError(field, "an unparsed answer (null score) always escalates")
        answers.append((score, escalated))
    observed_total = check_value(state.get("observed_total", len(answers)), OBSERVED_TOTAL,
                                 "state_dict.observed_total")
    return answers, observed_total
