"""The report card's numpy metrics against scikit-learn (the trusted reference)."""

from __future__ import annotations

import numpy as np
import pytest

from imad.report import metrics
from imad.report.drift import PSI_THRESHOLD, drift_reading, psi

sklearn_metrics = pytest.importorskip("sklearn.metrics")
calibration = pytest.importorskip("sklearn.calibration")


@pytest.mark.parametrize("seed", range(6))
def test_auroc_equals_sklearn_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    y = rng.random(n) < 0.3
    y[:2] = [True, False]
    scores = np.round(rng.random(n), 1 if seed % 2 else 6)  # coarse rounding: many ties
    assert metrics.auroc(y, scores) == pytest.approx(sklearn_metrics.roc_auc_score(y, scores), abs=1e-9)


def test_auroc_is_none_with_one_class():
    assert metrics.auroc(np.ones(5, dtype=bool), np.linspace(0, 1, 5)) is None


def test_ece_uses_sklearn_calibration_curve_bins():
    rng = np.random.default_rng(3)
    p = rng.random(500)
    p[:3] = [0.0, 1.0, 1 / 15]  # the edges: first bin closed, right-closed after
    y = rng.random(500) < p
    accuracy, mean_p = calibration.calibration_curve(y, p, n_bins=15, strategy="uniform")
    bins = metrics.calibration_bins(y, p)
    np.testing.assert_allclose(bins.accuracy, accuracy, atol=1e-12)
    np.testing.assert_allclose(bins.mean_probability, mean_p, atol=1e-12)
    expected = np.sum(bins.counts / 500 * np.abs(accuracy - mean_p))
    assert metrics.ece(y, p) == pytest.approx(expected, abs=1e-12)


def test_brier_equals_sklearn():
    rng = np.random.default_rng(4)
    p = rng.random(300)
    y = rng.random(300) < 0.5
    assert metrics.brier(y, p) == pytest.approx(sklearn_metrics.brier_score_loss(y, p), abs=1e-12)


def test_bootstrap_interval_brackets_the_value_and_is_seeded():
    rng = np.random.default_rng(5)
    p = rng.random(400)
    y = rng.random(400) < p
    low, high = metrics.bootstrap_interval(metrics.auroc, y, p, samples=300)
    assert low < metrics.auroc(y, p) < high
    assert metrics.bootstrap_interval(metrics.auroc, y, p, samples=300) == (low, high)


def test_deferral_curve_of_the_oracle_and_by_hand():
    y = np.array([1, 0, 1, 1, 0], dtype=float)
    scores = np.array([0.9, 0.1, 0.2, 0.8, 0.7])
    rates, kept = metrics.deferral_curve(y, scores, np.array([0.0, 0.2, 0.4, 0.6, 1.0]))
    # escalate 0.1 (wrong) first, then 0.2 (right), then 0.7 (wrong)
    assert kept.tolist() == [3 / 5, 3 / 4, 2 / 3, 2 / 2, 1.0]
    _, oracle = metrics.deferral_curve(y, y, np.array([0.0, 0.4]))
    assert oracle.tolist() == [0.6, 1.0]


def test_psi_of_the_same_distribution_is_small_and_of_a_shift_is_flagged():
    rng = np.random.default_rng(6)
    reference = rng.beta(5, 2, 5000)
    assert psi(reference, rng.beta(5, 2, 5000)) < 0.02
    shifted = psi(reference, rng.beta(2, 5, 5000))
    assert shifted > PSI_THRESHOLD and drift_reading(shifted) == "significant shift"


def test_psi_by_hand():
    reference = np.arange(10) / 10.0  # deciles at 0.1, 0.2, …: one row per bin
    current = np.array([0.05] * 5 + [0.95] * 5)  # half in the first bin, half in the last
    shares = np.full(10, 1e-4)
    shares[0] = shares[9] = 0.5
    expected = np.sum((shares - 0.1) * np.log(shares / 0.1))
    assert psi(reference, current) == pytest.approx(expected, rel=1e-12)


def test_the_bootstrap_metrics_equal_those_of_the_resampled_rows():
    rng = np.random.default_rng(9)
    y = rng.random(300) < 0.4
    scores = np.round(rng.random(300), 2)  # ties
    weighted = metrics._WeightedRows(y, scores)
    for _ in range(20):
        pick = rng.integers(0, 300, size=300)
        weights = np.bincount(pick, minlength=300)
        assert weighted.auroc(weights) == pytest.approx(
            sklearn_metrics.roc_auc_score(y[pick], scores[pick]), abs=1e-12)
        assert weighted.ece(weights) == pytest.approx(metrics.ece(y[pick], scores[pick]), abs=1e-12)
        assert weighted.brier(weights) == pytest.approx(
            sklearn_metrics.brier_score_loss(y[pick], scores[pick]), abs=1e-12)
