"""The report card's intervals and deferral curve, over the one metrics core (`imad.metrics`).

- AUROC, ECE over 15 equal-width bins, Brier and the reliability diagram's bins are `imad.metrics`'s
  (numpy only: no scikit-learn or torch at serving time), re-exported here for the card.
- 95% intervals: the percentile bootstrap over rows, seeded, so a report is the same bytes for
  the same log. A resample with one class has no AUROC and is skipped.
- The deferral curve: escalate the lowest-scored share r of answers, and the accuracy of the
  answers kept, for r from 0 to 1 (a gate that ranks well climbs fast; the oracle escalates
  the wrong answers first; a random gate stays at the base accuracy).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from imad.metrics import N_BINS, auroc, bin_index, brier, calibration_bins, ece, escalated_totals

__all__ = ["BOOTSTRAP_SAMPLES", "BOOTSTRAP_SEED", "N_BINS", "accuracy", "auroc", "bootstrap_interval",
           "brier", "calibration_bins", "deferral_curve", "ece"]

BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 0


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
    kept_correct = y.sum() - escalated_totals(scores, y)  # right answers among the n − k kept
    n = y.size
    rates = np.linspace(0.0, 1.0, 21) if rates is None else np.asarray(rates, dtype=np.float64)
    escalated = np.minimum(np.floor(rates * n + 1e-9).astype(int), n)
    kept = n - escalated
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy_kept = np.where(kept > 0, kept_correct[escalated] / np.maximum(kept, 1), 1.0)
    return rates, accuracy_kept
