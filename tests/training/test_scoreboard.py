"""The honest scoreboard (issue 35): within-group AUROC with bootstrap intervals, and the
permutation importance, against direct computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from training.scoreboard import (
    auroc_interval,
    ece_interval,
    format_importance,
    format_scoreboard,
    permutation_importance,
    scoreboard,
)


def _two_datasets(n: int = 200) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Dataset a: all wrong, low scores; dataset b: mostly right, high scores, no ranking inside
    either: the pooled AUROC is high, the within-dataset ones are at chance (the issue's case)."""
    rng = np.random.default_rng(0)
    groups = ["a"] * n + ["b"] * n
    labels = np.concatenate([(rng.uniform(size=n) < 0.1), (rng.uniform(size=n) < 0.9)]).astype(int)
    scores = np.concatenate([rng.uniform(0.0, 0.5, n), rng.uniform(0.5, 1.0, n)])
    return labels, scores, groups


def test_the_pooled_number_hides_chance_within_each_dataset() -> None:
    labels, scores, groups = _two_datasets()
    board = scoreboard(labels, {"router": scores}, {"dataset": groups})
    assert board["pooled"]["router"]["auroc"] > 0.85
    for group in ("a", "b"):
        row = board["dataset"][group]["router"]
        assert row["n"] == 200 and row["low"] < 0.5 < row["high"]
        assert row["low"] < row["auroc"] < row["high"]


def test_interval_is_nan_for_one_class_and_narrows_with_more_answers() -> None:
    row = auroc_interval(np.zeros(10), np.linspace(0, 1, 10))
    assert math.isnan(row["auroc"]) and math.isnan(row["low"])
    rng = np.random.default_rng(1)
    widths = []
    for n in (50, 800):
        y = (rng.uniform(size=n) < 0.5).astype(int)
        p = np.clip(0.5 + 0.3 * (y - 0.5) + rng.normal(0, 0.3, n), 0, 1)
        row = auroc_interval(y, p)
        widths.append(row["high"] - row["low"])
    assert widths[1] < widths[0] / 2


def test_permutation_importance_finds_the_one_feature_used() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(300, 3))
    y = (x[:, 1] + rng.normal(0, 0.5, 300) > 0).astype(int)
    rows = permutation_importance(lambda m: 1 / (1 + np.exp(-m[:, 1])), x, y, ["a", "b", "c"])
    assert rows[0]["feature"] == "b" and rows[0]["auroc_drop"] > 0.3
    assert {r["feature"]: r["auroc_drop"] for r in rows}["a"] == 0.0


def test_format_names_each_group_and_says_one_class() -> None:
    labels, scores, groups = _two_datasets()
    labels[:200] = 0
    text = format_scoreboard(scoreboard(labels, {"router": scores}, {"dataset": groups}),
                             [{"feature": "b", "auroc_drop": 0.2, "sd": 0.0}])
    assert "dataset=a (n=200)" in text and "n/a (one class)" in text
    assert "dataset=b (n=200)" in text and "what the router learned" in text and "b +0.200" in text


def test_ece_interval_is_the_percentile_bootstrap_of_ece() -> None:
    from training.metrics import expected_calibration_error

    rng = np.random.default_rng(4)
    y = (rng.uniform(size=150) < 0.3).astype(int)
    p = rng.uniform(size=150)
    rng = np.random.default_rng(0)  # the same draws, by hand
    values = [expected_calibration_error(y[pick], p[pick])
              for pick in (rng.integers(0, 150, 150) for _ in range(1000))]
    low, high = ece_interval(y, p)
    assert (low, high) == pytest.approx(tuple(np.percentile(values, [2.5, 97.5])))
    assert low < expected_calibration_error(y, p) < high
    assert ece_interval(np.ones(20), np.ones(20)) == (0.0, 0.0)  # one class is fine for ECE
    assert all(math.isnan(v) for v in ece_interval(np.zeros(0), np.zeros(0)))


def test_format_importance_shows_the_largest_drops_first() -> None:
    rows = [{"feature": "b", "auroc_drop": 0.21, "sd": 0.0},
            {"feature": "a", "auroc_drop": -0.004, "sd": 0.0}]
    assert format_importance(rows) == "b +0.210, a -0.004"
    assert format_importance(rows, shown=1) == "b +0.210"
