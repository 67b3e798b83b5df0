"""The report card's numbers, in numpy only (no scikit-learn or torch at serving time).

- AUROC by the Mann–Whitney rank sum with tied scores sharing their mean rank: equal to
  scikit-learn's `roc_auc_score` (tested to 1e-9).
- ECE over 15 equal-width bins with `calibration_curve`'s edges (the first bin [0, 1/15], the
  others right-closed), the same binning as `training.metrics` (which imad cannot import).
- Brier: the mean squared error of p against the 0/1 label.
- 95% intervals: the percentile bootstrap over rows, seeded, so a report is the same bytes for
  the same log. A resample with one class has no AUROC and is skipped.
- The deferral curve: escalate the lowest-scored share r of answers, and the accuracy of the
  answers kept, for r from 0 to 1 (a gate that ranks well climbs fast; the oracle escalates
  the wrong answers first; a random gate stays at the base accuracy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

N_BINS = 15
BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 0


def auroc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """P(score of a positive > score of a negative), ties counted half; None with one class."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    positives = int(y.sum())
    negatives = y.size - positives
    if positives == 0 or negatives == 0:
        return None
    ranks = _mean_ranks(s)
    rank_sum = float(ranks[y].sum())
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def _mean_ranks(scores: np.ndarray) -> np.ndarray:
    """1-based ranks, tied scores sharing the mean of their ranks."""
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    starts = np.r_[True, sorted_scores[1:] != sorted_scores[:-1]]
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], scores.size] - 1
    mean_rank = (first + last) / 2.0 + 1.0
    ranks = np.empty(scores.size, dtype=np.float64)
    ranks[order] = mean_rank[group]
    return ranks


def bin_index(probabilities: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Each p's equal-width bin, as scikit-learn's `calibration_curve(strategy="uniform")`."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.searchsorted(edges[1:-1], np.asarray(probabilities, dtype=np.float64))


@dataclass(frozen=True)
class Reliability:
    """The non-empty bins of a reliability diagram: rows, mean p and accuracy per bin."""

    counts: np.ndarray
    mean_probability: np.ndarray
    accuracy: np.ndarray


def reliability(labels: np.ndarray, probabilities: np.ndarray, n_bins: int = N_BINS) -> Reliability:
    y = np.asarray(labels, dtype=np.float64)
    p = np.asarray(probabilities, dtype=np.float64)
    ids = bin_index(p, n_bins)
    counts = np.bincount(ids, minlength=n_bins)
    keep = counts > 0
    sums_p = np.bincount(ids, weights=p, minlength=n_bins)
    sums_y = np.bincount(ids, weights=y, minlength=n_bins)
    return Reliability(counts[keep], sums_p[keep] / counts[keep], sums_y[keep] / counts[keep])


def ece(labels: np.ndarray, probabilities: np.ndarray, n_bins: int = N_BINS) -> float | None:
    """Σ_b |B_b|/N · |accuracy(b) − mean p(b)|; None without rows."""
    bins = reliability(labels, probabilities, n_bins)
    total = bins.counts.sum()
    if total == 0:
        return None
    return float(np.sum(bins.counts / total * np.abs(bins.accuracy - bins.mean_probability)))


def brier(labels: np.ndarray, probabilities: np.ndarray) -> float | None:
    y = np.asarray(labels, dtype=np.float64)
    p = np.asarray(probabilities, dtype=np.float64)
    return float(np.mean((p - y) ** 2)) if y.size else None


def accuracy(labels: np.ndarray) -> float | None:
    y = np.asarray(labels, dtype=np.float64)
    return float(y.mean()) if y.size else None


def bootstrap_interval(metric: Callable[[np.ndarray, np.ndarray], float | None],
                       labels: np.ndarray, scores: np.ndarray, *,
                       samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED
                       ) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles of `metric` over row resamples; None when fewer than
    half of the resamples had a value."""
    y = np.asarray(labels)
    s = np.asarray(scores, dtype=np.float64)
    if y.size == 0:
        return None
    generator = np.random.default_rng(seed)
    weighted = _WeightedRows(y, s)
    by_weights = {auroc: weighted.auroc, ece: weighted.ece, brier: weighted.brier}.get(metric)
    values = []
    for _ in range(samples):
        pick = generator.integers(0, y.size, size=y.size)
        value = (by_weights(np.bincount(pick, minlength=y.size)) if by_weights is not None
                 else metric(y[pick], s[pick]))
        if value is not None:
            values.append(value)
    if len(values) < samples / 2:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


class _WeightedRows:
    """Rows sorted and binned once, so a metric of a resample (each row weighted by how often
    it was drawn) costs O(n) with no sort or search per resample; the values equal the metric
    of the resampled rows (tested)."""

    def __init__(self, labels: np.ndarray, scores: np.ndarray) -> None:
        self.labels = np.asarray(labels, dtype=np.float64)
        self.scores = scores
        self.bins = bin_index(scores)
        self.order = np.argsort(scores, kind="mergesort")
        sorted_scores = scores[self.order]
        self.group = np.cumsum(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]]) - 1
        self.groups = int(self.group[-1]) + 1 if scores.size else 0
        self.positive = np.asarray(labels, dtype=bool)[self.order]

    def auroc(self, weights: np.ndarray) -> float | None:
        w = weights[self.order].astype(np.float64)
        positive_w = np.where(self.positive, w, 0.0)
        negative_w = w - positive_w
        positives, negatives = positive_w.sum(), negative_w.sum()
        if positives == 0 or negatives == 0:
            return None
        per_group_negative = np.bincount(self.group, weights=negative_w, minlength=self.groups)
        per_group_positive = np.bincount(self.group, weights=positive_w, minlength=self.groups)
        below = np.cumsum(per_group_negative) - per_group_negative
        return float(np.sum(per_group_positive * (below + 0.5 * per_group_negative))
                     / (positives * negatives))

    def ece(self, weights: np.ndarray) -> float | None:
        w = weights.astype(np.float64)
        total = w.sum()
        if total == 0:
            return None
        # Σ_b n_b/N · |acc_b − p̄_b| = Σ_b |Σ_b y − Σ_b p| / N
        sum_p = np.bincount(self.bins, weights=w * self.scores, minlength=N_BINS)
        sum_y = np.bincount(self.bins, weights=w * self.labels, minlength=N_BINS)
        return float(np.sum(np.abs(sum_y - sum_p)) / total)

    def brier(self, weights: np.ndarray) -> float | None:
        w = weights.astype(np.float64)
        total = w.sum()
        return float(np.sum(w * (self.scores - self.labels) ** 2) / total) if total else None


def deferral_curve(labels: np.ndarray, scores: np.ndarray,
                   rates: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(escalation rates, accuracy of the kept answers): escalate the lowest scores first.

    Ties are broken by row order (stable), so the curve is the same bytes for the same rows; at
    rate 1 nothing is kept and the accuracy is 1.0 by convention (no kept answer is wrong)."""
    y = np.asarray(labels, dtype=np.float64)
    order = np.argsort(np.asarray(scores, dtype=np.float64), kind="stable")
    kept_correct = np.r_[np.cumsum(y[order][::-1])[::-1], 0.0]  # correct among order[k:]
    n = y.size
    rates = np.linspace(0.0, 1.0, 21) if rates is None else np.asarray(rates, dtype=np.float64)
    escalated = np.minimum(np.floor(rates * n + 1e-9).astype(int), n)
    kept = n - escalated
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy_kept = np.where(kept > 0, kept_correct[escalated] / np.maximum(kept, 1), 1.0)
    return rates, accuracy_kept
