"""`imad.metrics`, the one metrics core, against trusted references: scikit-learn's
`roc_auc_score`, `brier_score_loss` and `calibration_curve` bins, scipy's `rankdata`, and
deferral totals by hand."""

from __future__ import annotations

import numpy as np
import pytest

from imad import metrics

sklearn_metrics = pytest.importorskip("sklearn.metrics")
calibration = pytest.importorskip("sklearn.calibration")
stats = pytest.importorskip("scipy.stats")


def _scores(seed: int, n: int = 400, decimals: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, size=n)
    p[:16] = np.linspace(0, 1, 16)  # every bin edge, 0 and 1
    if decimals is not None:
        p = np.round(p, decimals)  # coarse rounding: many ties
    y = (rng.uniform(size=n) < p ** 1.5).astype(int)
    return y, p


@pytest.mark.parametrize("seed", range(6))
def test_average_ranks_equal_scipy_rankdata(seed):
    _, p = _scores(seed, decimals=1 if seed % 2 else None)
    ranks, counts = metrics.average_ranks(p)
    np.testing.assert_array_equal(ranks, stats.rankdata(p, method="average"))
    assert counts.tolist() == np.unique(p, return_counts=True)[1].tolist() and counts.sum() == p.size


@pytest.mark.parametrize("seed", range(6))
def test_auroc_equals_sklearn_with_and_without_ties(seed):
    y, p = _scores(seed, decimals=1 if seed % 2 else None)
    assert metrics.auroc(y, p) == pytest.approx(sklearn_metrics.roc_auc_score(y, p), abs=1e-12)


def test_auroc_by_hand_and_none_with_one_class():
    # positives 0.8, 0.4; negatives 0.4, 0.1: pairs won 1 + 1 + 0.5 (the tie) + 1 of 4
    assert metrics.auroc(np.array([1, 1, 0, 0]), np.array([0.8, 0.4, 0.4, 0.1])) == 3.5 / 4
    assert metrics.auroc(np.ones(5, dtype=bool), np.linspace(0, 1, 5)) is None
    assert metrics.auroc(np.zeros(0), np.zeros(0)) is None


@pytest.mark.parametrize("seed", range(3))
def test_bins_equal_sklearn_calibration_curve(seed):
    y, p = _scores(seed)
    prob_true, prob_pred = calibration.calibration_curve(y, p, n_bins=15, strategy="uniform")
    bins = metrics.calibration_bins(y, p)
    np.testing.assert_array_equal(bins.accuracy, prob_true)
    np.testing.assert_array_equal(bins.mean_probability, prob_pred)
    expected = float(np.sum(bins.counts / p.size * np.abs(prob_true - prob_pred)))
    assert metrics.ece(y, p) == pytest.approx(expected, rel=1e-12)


def test_bin_edges_are_right_closed_like_sklearn():
    assert metrics.bin_index(np.array([0.0, 1 / 15, 1 / 15 + 1e-12, 0.5, 1.0])).tolist() == [
        0, 0, 1, 7, 14]


def test_ece_and_brier_by_hand_and_none_without_rows():
    y, p = np.array([1, 0, 1, 1]), np.array([0.95, 0.95, 0.1, 0.5])
    # bins: {0.95, 0.95}: |0.5 − 0.95|, {0.1}: |1 − 0.1|, {0.5}: |1 − 0.5|
    assert metrics.ece(y, p) == pytest.approx(2 / 4 * 0.45 + 1 / 4 * 0.9 + 1 / 4 * 0.5)
    assert metrics.brier(y, p) == pytest.approx((0.05 ** 2 + 0.95 ** 2 + 0.9 ** 2 + 0.5 ** 2) / 4)
    assert metrics.ece(np.zeros(0), np.zeros(0)) is None and metrics.brier(np.zeros(0), np.zeros(0)) is None


@pytest.mark.parametrize("seed", range(3))
def test_brier_equals_sklearn(seed):
    y, p = _scores(seed)
    assert metrics.brier(y, p) == pytest.approx(sklearn_metrics.brier_score_loss(y, p), rel=1e-12)


def test_escalated_totals_stable_and_with_ties_averaged_by_hand():
    scores = np.array([0.5, 0.1, 0.5, 0.9])
    values = np.array([1.0, 2.0, 4.0, 8.0])
    # lowest first, ties by row order: 0.1 (2), then the 0.5s in row order (1, 4), then 0.9 (8)
    assert metrics.escalated_totals(scores, values).tolist() == [0, 2, 3, 7, 15]
    # a cut inside the tied pair escalates each half the time: 2 + (1 + 4) / 2
    assert metrics.escalated_totals(scores, values, average_ties=True).tolist() == [0, 2, 4.5, 7, 15]
    # one constant score: the random gate's expectation, k · mean
    constant = metrics.escalated_totals(np.zeros(4), values, average_ties=True)
    np.testing.assert_allclose(constant, np.arange(5) * values.mean())
    assert metrics.escalated_totals(np.zeros(0), np.zeros(0), average_ties=True).tolist() == [0.0]
