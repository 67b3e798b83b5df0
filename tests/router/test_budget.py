"""TriggerBudget: τ equals numpy's quantile of the window, warm-up, unparsed answers, threads,
persistence and refused input."""

from __future__ import annotations

import json
import sys
import threading

import numpy as np
import pytest

from imad.decide.budget import QUANTILE_METHOD, TriggerBudget
from imad.errors import ConfigError


def window_threshold(scores: list[float], rate: float) -> float:
    return float(np.quantile(np.asarray(scores), rate, method=QUANTILE_METHOD))


@pytest.mark.parametrize("seed", range(5))
def test_threshold_is_numpy_quantile_of_the_last_window_scores(seed):
    rng = np.random.default_rng(seed)
    rate = float(rng.uniform(0.02, 0.6))
    window = int(rng.integers(5, 120))
    budget = TriggerBudget(rate, window=window, min_observations=1)
    # Beta scores with repeated values: ties and a drift halfway through.
    scores = np.round(np.concatenate([rng.beta(5, 2, 300), rng.beta(2, 5, 300)]), 3)
    for position, p in enumerate(scores.tolist()):
        returned = budget.observe(p)
        expected = window_threshold(scores[max(0, position + 1 - window): position + 1].tolist(), rate)
        assert returned == expected
        assert budget.threshold == expected


def test_realized_rate_counts_the_escalations_decided_with_each_threshold():
    rng = np.random.default_rng(7)
    budget = TriggerBudget(0.2, window=100, min_observations=10, initial_threshold=0.5)
    decisions = []
    for p in rng.uniform(size=400).tolist():
        decisions.append(p < budget.observe(p))
    stats = budget.stats()
    assert stats.answers_in_window == 100
    assert stats.realized_rate == pytest.approx(np.mean(decisions[-100:]))
    # inverted_cdf with the current answer in the window never escalates above the target share
    # of the window it was computed on: 0.2·100 − 1 = 19 of the 100 lowest.
    assert 0.1 <= stats.realized_rate <= 0.3
    assert stats.observed_total == 400


def test_warm_up_uses_the_initial_threshold_until_min_observations_scores():
    budget = TriggerBudget(0.5, window=10, min_observations=4, initial_threshold=0.9)
    assert budget.threshold == 0.9
    assert budget.stats().from_budget is False
    for p in (0.1, 0.2, 0.3):
        assert budget.observe(p) == 0.9  # still warming up: every one of them escalates
    assert budget.observe(0.4) == window_threshold([0.1, 0.2, 0.3, 0.4], 0.5) == 0.2
    assert budget.stats().from_budget is True
    assert budget.stats().realized_rate == 0.75  # three at τ 0.9, then 0.4 ≥ 0.2 kept


def test_without_an_initial_threshold_the_quantile_is_used_from_the_first_score():
    budget = TriggerBudget(0.2, window=50, min_observations=20)
    assert budget.threshold is None
    assert budget.stats().from_budget is False
    assert budget.observe(0.6) == 0.6
    assert budget.stats().from_budget is True


def test_unparsed_answers_count_against_the_budget():
    budget = TriggerBudget(0.25, window=8, min_observations=1)
    for p in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6):
        budget.observe(p)
    budget.observe_unparsed()
    # 7 answers, 1 unparsed: the parsed scores' level is (0.25·7 − 1) / 6 = 0.125.
    assert budget.quantile_level() == pytest.approx(0.125)
    assert budget.threshold == window_threshold([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], 0.125) == 0.1
    budget.observe_unparsed()
    budget.observe_unparsed()  # 8 answers in the window, the oldest (0.1) evicted, 3 unparsed
    stats = budget.stats()
    assert (stats.answers_in_window, stats.unparsed_in_window) == (8, 3)
    assert budget.quantile_level() == 0.0
    assert budget.threshold == 0.0  # unparsed answers alone exceed the budget: keep every scored one
    assert budget.observe(0.05) >= 0.0
    assert budget.stats().realized_rate > 0.25  # reported honestly, not hidden


def test_a_window_of_unparsed_answers_only_escalates_no_scored_answer():
    budget = TriggerBudget(0.2, window=3, min_observations=1)
    for _ in range(3):
        budget.observe_unparsed()
    assert budget.quantile_level() == 0.0
    assert budget.threshold is None  # no score yet and no initial τ
    assert budget.observe(0.01) == 0.0
    assert budget.stats().realized_rate == 2 / 3


@pytest.mark.parametrize("seed", range(3))
def test_with_unparsed_answers_threshold_is_numpy_quantile_at_the_corrected_level(seed):
    rng = np.random.default_rng(100 + seed)
    budget = TriggerBudget(0.3, window=40, min_observations=1)
    window: list[float | None] = []
    for _ in range(300):
        if rng.uniform() < 0.1:
            budget.observe_unparsed()
            window = (window + [None])[-40:]
            continue
        p = float(rng.uniform())
        window = (window + [p])[-40:]
        scores = [s for s in window if s is not None]
        unparsed = len(window) - len(scores)
        level = max((0.3 * len(window) - unparsed) / len(scores), 0.0)
        expected = 0.0 if level == 0.0 else window_threshold(scores, level)
        assert budget.observe(p) == expected


def test_eight_threads_lose_no_observation():
    threads, per_thread = 8, 1_000
    budget = TriggerBudget(0.2, window=threads * per_thread, min_observations=1)
    start = threading.Barrier(threads)
    streams = [np.random.default_rng(seed).uniform(size=per_thread).tolist() for seed in range(threads)]
    returned: list[list[float]] = [[] for _ in range(threads)]

    def worker(index: int) -> None:
        start.wait()  # every thread observes at once
        for p in streams[index]:
            returned[index].append(budget.observe(p))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    everything = sorted(p for stream in streams for p in stream)
    state = budget.state_dict()
    assert budget.stats().observed_total == threads * per_thread
    assert sorted(score for score, _ in state["answers"]) == everything
    assert budget.threshold == window_threshold(everything, 0.2)
    assert all(len(values) == per_thread for values in returned)


def test_state_round_trip_through_json():
    rng = np.random.default_rng(3)
    budget = TriggerBudget(0.15, window=30, min_observations=5, initial_threshold=0.7)
    for p in rng.uniform(size=50).tolist():
        budget.observe(p)
    budget.observe_unparsed()
    state = json.loads(json.dumps(budget.state_dict()))
    restored = TriggerBudget.from_state_dict(state)
    assert restored.stats() == budget.stats()
    assert restored.state_dict() == budget.state_dict()
    for p in rng.uniform(size=20).tolist():
        assert restored.observe(p) == budget.observe(p)


def test_a_smaller_window_keeps_the_newest_answers_of_a_state():
    budget = TriggerBudget(0.5, window=10, min_observations=1)
    for p in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6):
        budget.observe(p)
    smaller = TriggerBudget(0.5, window=3, min_observations=1)
    smaller.load_state_dict(budget.state_dict())
    assert [score for score, _ in smaller.state_dict()["answers"]] == [0.4, 0.5, 0.6]
    assert smaller.threshold == 0.5


@pytest.mark.parametrize("p", [float("nan"), float("inf"), -float("inf"), -0.1, 1.5, "0.3", True, None])
def test_bad_scores_are_refused_and_change_nothing(p):
    budget = TriggerBudget(0.2, window=10, min_observations=1)
    budget.observe(0.4)
    before = budget.state_dict()
    with pytest.raises(ConfigError, match="^p: "):
        budget.observe(p)
    assert budget.state_dict() == before


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"target_rate": 0.0}, "target_rate"),
        ({"target_rate": 1.0}, "target_rate"),
        ({"target_rate": float("nan")}, "target_rate"),
        ({"target_rate": "0.2"}, "target_rate"),
        ({"target_rate": 0.2, "window": 0}, "window"),
        ({"target_rate": 0.2, "window": 2.5}, "window"),
        ({"target_rate": 0.2, "min_observations": 0}, "min_observations"),
        ({"target_rate": 0.2, "window": 10, "min_observations": 11}, "min_observations"),
        ({"target_rate": 0.2, "initial_threshold": 1.2}, "initial_threshold"),
    ],
)
def test_invalid_settings_raise_config_error_naming_the_field(kwargs, field):
    with pytest.raises(ConfigError) as error:
        TriggerBudget(**kwargs)
    assert error.value.field == field


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"version": 99}, "state_dict.version"),
        ({"answers": "none"}, "state_dict.answers"),
        ({"answers": [[0.5, True], [float("nan"), False]]}, "state_dict.answers[1]"),
        ({"answers": [[0.5, "yes"]]}, "state_dict.answers[0]"),
        ({"answers": [[None, False]]}, "state_dict.answers[0]"),
        ({"observed_total": -1}, "state_dict.observed_total"),
    ],
)
def test_a_malformed_state_is_refused_and_the_budget_is_unchanged(change, field):
    budget = TriggerBudget(0.2, window=10, min_observations=1)
    budget.observe(0.4)
    before = budget.state_dict()
    with pytest.raises(ConfigError) as error:
        budget.load_state_dict({**before, **change})
    assert error.value.field == field
    assert budget.state_dict() == before


def test_trigger_budget_is_exported_from_imad():
    import imad

    assert imad.TriggerBudget is TriggerBudget
