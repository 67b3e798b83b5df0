"""Hostile table for `imad.TriggerBudget` (issue 23): every setting, score and state entry that is
a huge integer, 1e999, NaN or the wrong type is a `ConfigError` naming the field, with a message
that stays short (a 5,000-digit integer cannot even be printed by Python), and a refused state
leaves the budget as it was."""

from __future__ import annotations

import sys

import pytest

from imad import TriggerBudget
from imad.errors import ConfigError

BIG = 10**400
_old_limit = sys.get_int_max_str_digits()
sys.set_int_max_str_digits(0)
HUGE = int("1" + "0" * 5000)  # beyond Python's 4,300-digit str limit
sys.set_int_max_str_digits(_old_limit)



def _id(value: object) -> str:
    return "5000-digit int" if value is HUGE else repr(value)[:20]


HOSTILE_NUMBERS = [BIG, -BIG, HUGE, float("inf"), float("-inf"), float("nan"), 1e308, "0.5", None,
                   [0.5], True]


@pytest.mark.parametrize("value", HOSTILE_NUMBERS, ids=_id)
@pytest.mark.parametrize("field", ["target_rate", "window", "min_observations",
                                   "initial_threshold"])
def test_a_hostile_setting_is_a_config_error_naming_it(field, value):
    if field == "initial_threshold" and value is None:
        pytest.skip("None means no initial τ")
    settings = {"target_rate": 0.2, "window": 10, "min_observations": 5, field: value}
    with pytest.raises(ConfigError) as error:
        TriggerBudget(**settings)
    assert error.value.field == field
    assert len(str(error.value)) < 300


@pytest.mark.parametrize("value", HOSTILE_NUMBERS + [1.5, -0.1, 2], ids=_id)
def test_a_hostile_score_is_refused_and_not_observed(value):
    budget = TriggerBudget(0.2, window=10, min_observations=5)
    budget.observe(0.4)
    before = budget.state_dict()
    with pytest.raises(ConfigError) as error:
        budget.observe(value)
    assert error.value.field == "p"
    assert len(str(error.value)) < 300
    assert budget.state_dict() == before


@pytest.mark.parametrize(("change", "field"), [
    ({"answers": [[BIG, False]]}, "state_dict.answers[0]"),
    ({"answers": [[HUGE, True]]}, "state_dict.answers[0]"),
    ({"answers": [[HUGE, True, 1]]}, "state_dict.answers[0]"),
    ({"answers": [[1e308, False]]}, "state_dict.answers[0]"),
    ({"answers": [[0.5, 1]]}, "state_dict.answers[0]"),
    ({"answers": {"0": [0.5, True]}}, "state_dict.answers"),
    ({"observed_total": HUGE}, "state_dict.observed_total"),
    ({"observed_total": 2**63}, "state_dict.observed_total"),
    ({"observed_total": 1e999}, "state_dict.observed_total"),
    ({"observed_total": "7"}, "state_dict.observed_total"),
    ({"version": HUGE}, "state_dict.version"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_a_hostile_state_entry_is_refused_and_the_budget_is_unchanged(change, field):
    budget = TriggerBudget(0.2, window=10, min_observations=5)
    budget.observe(0.4)
    before = budget.state_dict()
    with pytest.raises(ConfigError) as error:
        budget.load_state_dict({**before, **change})
    assert error.value.field == field
    assert len(str(error.value)) < 300
    assert budget.state_dict() == before


@pytest.mark.parametrize(("key", "value"), [("window", HUGE), ("window", BIG),
                                            ("min_observations", HUGE),
                                            ("initial_threshold", BIG), ("target_rate", HUGE)],
                         ids=_id)
def test_a_hostile_saved_setting_is_refused_by_from_state_dict(key, value):
    state = {**TriggerBudget(0.2, window=10, min_observations=5).state_dict(), key: value}
    with pytest.raises(ConfigError) as error:
        TriggerBudget.from_state_dict(state)
    assert error.value.field == key


def test_the_largest_window_is_accepted_and_one_more_is_not():
    from imad.routing_options import MAX_BUDGET_WINDOW

    assert TriggerBudget(0.2, window=MAX_BUDGET_WINDOW).window == MAX_BUDGET_WINDOW
    with pytest.raises(ConfigError, match=r"window: must be an integer in \[1, 1000000\], got 1000001"):
        TriggerBudget(0.2, window=MAX_BUDGET_WINDOW + 1)
