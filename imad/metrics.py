"""The metrics of a probability score, in numpy only: one implementation of each.

The report card (`imad.report`), recalibration's choice (`imad.router.calibrators`) and the
training code (`training.metrics`, which wraps these with its registry and input checks) all
import them from here, as scikit-learn's estimators share `sklearn.metrics`; no torch or
scikit-learn is needed to compute them.

- Ranks: 1-based, tied values sharing the mean of their ranks (scipy's `rankdata`).
- AUROC: P(score of a positive > score of a negative), ties counted half, by the Mann–Whitney
  rank sum: equal to scikit-learn's `roc_auc_score` (tested); None with one class.
- Bins: 15 equal-width bins with the edges of `calibration_curve(strategy="uniform")` (the
  first bin [0, 1/15], the others right-closed), so the per-bin numbers equal scikit-learn's.
- ECE: Σ_b |B_b|/N · |accuracy(b) − mean p(b)| over those bins; Brier: the mean squared error of
  p against the 0/1 label; both None without rows.
- The deferral curve's core, `escalated_totals`: the sum of a value over the k lowest-scored
  rows, k = 0…n — what escalating the k lowest scores to a debate changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_BINS = 15


def average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based ranks of `values`, tied values sharing their mean rank, and the size of each tie
    group (ascending by value)."""
    _, inverse, counts = np.unique(np.asarray(values, dtype=np.float64), return_inverse=True,
                                   return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2.0)[inverse.reshape(-1)], counts


def auroc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """P(score of a positive > score of a negative), ties counted half; None with one class."""
    y = np.asarray(labels).reshape(-1).astype(bool)
    positives = int(y.sum())
    negatives = y.size - positives
    if positives == 0 or negatives == 0:
        return None
    rank_sum = float(average_ranks(scores)[0][y].sum())
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def bin_index(probabilities: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Each p's equal-width bin, as scikit-learn's `calibration_curve(strategy="uniform")`."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.searchsorted(edges[1:-1], np.asarray(probabilities, dtype=np.float64))


@dataclass(frozen=True)
class CalibrationBins:
    """The non-empty bins of a reliability diagram, ascending in p."""

    counts: np.ndarray
    accuracy: np.ndarray
    """Share of right answers per bin (scikit-learn's `prob_true`)."""
    mean_probability: np.ndarray
    """Mean p per bin (scikit-learn's `prob_pred`)."""


def calibration_bins(labels: np.ndarray, probabilities: np.ndarray,
                     n_bins: int = N_BINS) -> CalibrationBins:
    """Rows, accuracy and mean p of each non-empty equal-width bin."""
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    p = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    ids = bin_index(p, n_bins)
    counts = np.bincount(ids, minlength=n_bins)
    keep = counts > 0
    sums_p = np.bincount(ids, weights=p, minlength=n_bins)
    sums_y = np.bincount(ids, weights=y, minlength=n_bins)
    return CalibrationBins(counts[keep], sums_y[keep] / counts[keep], sums_p[keep] / counts[keep])


def ece_of_bins(bins: CalibrationBins) -> float | None:
    """Σ_b |B_b|/N · |accuracy(b) − mean p(b)| of already-formed bins; None without rows."""
    total = bins.counts.sum()
    if total == 0:
        return None
    return float(np.sum(bins.counts / total * np.abs(bins.accuracy - bins.mean_probability)))


def ece(labels: np.ndarray, probabilities: np.ndarray, n_bins: int = N_BINS) -> float | None:
    """The expected calibration error over `n_bins` equal-width bins; None without rows."""
    return ece_of_bins(calibration_bins(labels, probabilities, n_bins))


def brier(labels: np.ndarray, probabilities: np.ndarray) -> float | None:
    """The mean squared error of p against the 0/1 label; None without rows."""
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    p = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    return float(np.mean((p - y) ** 2)) if y.size else None


def escalated_totals(scores: np.ndarray, values: np.ndarray, *,
                     average_ties: bool = False) -> np.ndarray:
    """Σ `values` over the k lowest-scored rows, for k = 0…n (n + 1 numbers): what escalating
    the k lowest scores moves, the one core of every deferral curve.

    Ties are broken by row order (stable) unless `average_ties`: then a cut inside a group of
    equal scores counts each member as escalated with the same probability, the expected value
    of breaking the tie at random (a constant score then gives the random gate's expectation).
    """
    score = np.asarray(scores, dtype=np.float64).reshape(-1)
    order = np.argsort(score, kind="stable")
    cumulative = np.concatenate([[0.0], np.cumsum(np.asarray(values, dtype=np.float64)[order])])
    n = score.size
    if not average_ties or n == 0:
        return cumulative
    ranked = score[order]
    k = np.arange(n + 1)
    position = np.minimum(k, n - 1)  # for k < n the cut sits before sorted position k, in its group
    start = np.searchsorted(ranked, ranked, side="left")[position]
    end = np.searchsorted(ranked, ranked, side="right")[position]
    share = np.where(k < n, (k - start) / (end - start), 0.0)
    return np.where(k < n, cumulative[start] + share * (cumulative[end] - cumulative[start]),
                    cumulative[n])
