"""`auto`, the default calibrator (issue 35): the base rate unless a map beats it beyond chance,
and never a decreasing map unless the labels show the inversion beyond chance."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from imad.router.calibrators import calibrator_from_dict, fit_calibrator
from imad.router.calibrators.selection import mann_whitney_less


def _noise(seed: int, n: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Scores that carry no signal: labels drawn independently of them."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.01, 0.99, n), (rng.uniform(size=n) < 0.3).astype(int)


def _signal(seed: int, n: int = 50, *, inverted: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Labels that follow the score strongly (or its complement)."""
    rng = np.random.default_rng(seed)
    scores = rng.uniform(0.01, 0.99, n)
    truth = 1 - scores if inverted else scores
    return scores, (rng.uniform(size=n) < truth ** 2).astype(int)


@pytest.mark.parametrize("seed", range(4))
def test_mann_whitney_equals_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = np.round(rng.uniform(size=60), 1)  # many ties
    labels = (rng.uniform(size=60) < 0.4).astype(int)
    expected = mannwhitneyu(scores[labels == 1], scores[labels == 0], alternative="less",
                            method="asymptotic").pvalue
    assert mann_whitney_less(scores, labels) == pytest.approx(expected, rel=1e-9)


def test_mann_whitney_without_both_classes_or_spread_is_one() -> None:
    assert mann_whitney_less(np.linspace(0, 1, 10), np.ones(10)) == 1.0
    assert mann_whitney_less(np.full(10, 0.3), np.array([0, 1] * 5)) == 1.0


def test_auto_is_the_default_and_keeps_the_base_rate_on_noise() -> None:
    """Scores without signal: 30 seeded draws of 50 labels, never a map, never a decreasing one."""
    kinds = []
    for seed in range(30):
        scores, labels = _noise(seed)
        fitted = fit_calibrator(scores, labels)
        kinds.append(fitted.kind)
        assert not fitted.decreasing
        assert fitted.fitted_on.chosen_by == "auto" and fitted.fitted_on.reason
    assert kinds.count("base_rate") >= 27, kinds  # α = 0.05: a chance win stays rare


def test_the_base_rate_is_jeffreys_posterior_mean() -> None:
    scores, labels = _noise(3)
    fitted = fit_calibrator(scores, labels, "base_rate")
    assert fitted.rate == pytest.approx((labels.sum() + 0.5) / (labels.size + 1))
    np.testing.assert_array_equal(fitted.apply(np.array([0.1, np.nan]))[1:], [np.nan])


@pytest.mark.parametrize("seed", range(3))
def test_auto_fits_a_map_when_the_scores_rank_the_answers(seed: int) -> None:
    scores, labels = _signal(seed, 200)
    fitted = fit_calibrator(scores, labels, sources=["mine.jsonl"])
    assert fitted.kind in ("platt", "isotonic") and not fitted.decreasing
    assert "beats the base rate beyond chance" in fitted.fitted_on.reason
    p = fitted.apply(np.array([0.05, 0.95]))
    assert p[1] - p[0] > 0.5


def test_auto_fits_a_decreasing_map_only_for_an_inversion_beyond_chance() -> None:
    scores, labels = _signal(0, 200, inverted=True)
    assert mann_whitney_less(scores, labels) < 1e-6
    fitted = fit_calibrator(scores, labels)
    assert fitted.kind == "platt" and fitted.decreasing
    assert "inversion beyond chance" in fitted.fitted_on.reason


def test_a_negative_slope_within_chance_is_not_tried() -> None:
    """Noise whose Platt slope happens to be negative: the reason says the test kept Platt out."""
    for seed in range(200):
        scores, labels = _noise(seed)
        if (fit_calibrator(scores, labels, "platt").slope < 0
                and mann_whitney_less(scores, labels) >= 0.05):
            break
    else:
        pytest.fail("no noisy draw with a negative Platt slope")
    fitted = fit_calibrator(scores, labels)
    assert not fitted.decreasing
    assert "no decreasing map is tried" in fitted.fitted_on.reason


def test_the_choice_and_its_reason_round_trip_and_are_described() -> None:
    scores, labels = _signal(1, 120)
    fitted = fit_calibrator(scores, labels, sources=["mine.jsonl"])
    section = json.loads(json.dumps(fitted.to_dict()))
    assert section["fitted_on"]["chosen_by"] == "auto"
    assert section["fitted_on"]["reason"] == fitted.fitted_on.reason
    assert calibrator_from_dict(section) == fitted
    text = fitted.describe()
    assert text.startswith(f"{fitted.kind} fitted on 120 labelled answers") and "chosen by auto:" in text
    assert "cross-validated log loss" in text


def test_auto_is_deterministic() -> None:
    scores, labels = _signal(2, 80)
    assert fit_calibrator(scores, labels) == fit_calibrator(scores, labels)


def test_named_methods_are_unchanged_by_auto() -> None:
    scores, labels = _noise(1)
    platt = fit_calibrator(scores, labels, "platt")
    assert platt.fitted_on.chosen_by is None and platt.fitted_on.reason is None
