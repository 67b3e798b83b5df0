"""Metrics against trusted references: sklearn's calibration_curve, Brier and ROC AUC."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, roc_auc_score

from training.metrics import (
    adaptive_calibration_error,
    auroc,
    bin_indices,
    brier_score,
    calibration_bins,
    expected_calibration_error,
    score_report,
)


def scores(seed: int, n: int = 400):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, size=n)
    p[:16] = np.linspace(0, 1, 16)  # every bin edge, 0 and 1
    y = (rng.uniform(size=n) < p ** 1.5).astype(int)
    return y, p


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bins_equal_sklearn_calibration_curve(seed):
    y, p = scores(seed)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=15, strategy="uniform")
    bins = calibration_bins(y, p, n_bins=15)
    np.testing.assert_array_equal(bins.accuracy, prob_true)
    np.testing.assert_array_equal(bins.mean_probability, prob_pred)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ece_equals_bin_formula_with_explicit_intervals(seed):
    y, p = scores(seed)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=15)
    edges = np.linspace(0, 1, 16)
    counts = [np.sum((p > lo) & (p <= hi)) + (np.sum(p == 0) if lo == 0 else 0)
              for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    counts = np.array([c for c in counts if c])
    reference = float(np.sum(counts / len(p) * np.abs(prob_true - prob_pred)))
    assert expected_calibration_error(y, p) == pytest.approx(reference, rel=1e-12)


def test_bin_edges_are_right_closed_like_sklearn():
    assert bin_indices(np.array([0.0, 1 / 15, 1 / 15 + 1e-12, 0.5, 1.0])).tolist() == [
        0, 0, 1, 7, 14]


def test_ece_hand_value():
    y = np.array([1, 0, 1, 1])
    p = np.array([0.95, 0.95, 0.1, 0.5])
    # bins: {0.95, 0.95}: |0.5 − 0.95|, {0.1}: |1 − 0.1|, {0.5}: |1 − 0.5|
    expected = 2 / 4 * 0.45 + 1 / 4 * 0.9 + 1 / 4 * 0.5
    assert expected_calibration_error(y, p) == pytest.approx(expected)


def test_adaptive_ece_hand_value():
    y = np.array([0, 1, 1, 1])
    p = np.array([0.1, 0.2, 0.8, 0.9])
    # 2 equal-mass bins: {0.1, 0.2} → |0.5 − 0.15|, {0.8, 0.9} → |1 − 0.85|
    assert adaptive_calibration_error(y, p, n_bins=2) == pytest.approx(0.5 * 0.35 + 0.5 * 0.15)


def test_brier_and_auroc_equal_sklearn():
    y, p = scores(4)
    assert brier_score(y, p) == pytest.approx(brier_score_loss(y, p), rel=1e-12)
    assert auroc(y, p) == pytest.approx(roc_auc_score(y, p), rel=1e-12)


def test_single_class_auroc_is_nan_and_report_is_complete():
    assert math.isnan(auroc(np.ones(5), np.linspace(0, 1, 5)))
    report = score_report(np.array([0, 1, 1]), np.array([0.2, 0.6, 0.9]), tau=0.7)
    assert report["trigger_rate"] == pytest.approx(2 / 3)
    assert report["n"] == 3 and report["positive_rate"] == pytest.approx(2 / 3)
    assert set(report) == {"auroc", "ece", "adaptive_ece", "brier", "n", "positive_rate",
                           "trigger_rate"}


def test_invalid_probabilities_are_refused():
    with pytest.raises(ValueError, match="within"):
        expected_calibration_error(np.array([1]), np.array([1.2]))
    with pytest.raises(ValueError, match="differ in length"):
        brier_score(np.array([1, 0]), np.array([0.5]))
