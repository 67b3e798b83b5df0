"""Hostile table: `EventCounts` refuses odd names and increments with a typed error naming
them, and a refused increment changes no count and tells no listener."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from imad.errors import ConfigError, UnknownEventError
from imad.event_counts import EventCounts

NAME_CASES = [
    ("a string alone (read as its letters)", "abc", "got str"),
    ("bytes", b"ab", "got bytes"),
    ("not iterable", 3, "got int"),
    ("a name twice", ["a", "a"], "a name twice"),
    ("an empty name", ["a", ""], "got ''"),
    ("a number", ["a", 1], "got 1"),
    ("None", [None], "got None"),
]


@pytest.mark.parametrize("name,names,message", NAME_CASES, ids=[c[0] for c in NAME_CASES])
def test_odd_names_are_refused(name, names, message) -> None:
    with pytest.raises(ConfigError, match=f"names: .*{message}"):
        EventCounts(names)


INCREMENT_CASES = [
    ("negative", -1, "only grows.*got -1"),
    ("a float", 1.5, "got 1.5"),
    ("a whole float", 1.0, "got 1.0"),
    ("NaN", float("nan"), "got nan"),
    ("a bool", True, "got True"),
    ("text", "2", "got '2'"),
    ("a Fraction", Fraction(1, 2), "got Fraction"),
    ("a numpy float", np.float32(2.0), "got np.float32"),
    ("a numpy array", np.array([1]), "got array"),
    ("None", None, "got None"),
]


@pytest.mark.parametrize("name,n,message", INCREMENT_CASES, ids=[c[0] for c in INCREMENT_CASES])
def test_odd_increments_are_refused_and_change_nothing(name, n, message) -> None:
    heard: list[tuple[str, int]] = []
    counts = EventCounts(["a"], on_count=lambda event, step: heard.append((event, step)))
    counts.add("a", 2)
    with pytest.raises(ConfigError, match=f"^n: .*{message}"):
        counts.add("a", n)
    assert counts["a"] == 2 and heard == [("a", 2)]


def test_a_numpy_integer_increment_counts_as_an_int() -> None:
    counts = EventCounts(["a"])
    assert counts.add("a", np.int64(3)) == 3 and type(counts["a"]) is int


@pytest.mark.parametrize("name", [["a"], {"a": 1}, np.array(["a"]), 1, None],
                         ids=["list", "dict", "array", "int", "None"])
def test_an_unhashable_or_non_text_name_is_an_unknown_event(name) -> None:
    counts = EventCounts(["a"])
    with pytest.raises(UnknownEventError, match="the declared ones are a"):
        counts.add(name)
