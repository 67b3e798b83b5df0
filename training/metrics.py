"""Training's registry of score metrics, over the one metrics core (`imad.metrics`).

AUROC, ECE (15 equal-width bins with the edges of scikit-learn's `calibration_curve`, so the
per-bin numbers equal sklearn's), Brier and the bins are `imad.metrics`'s; this module adds the
input check training wants (finite p in [0, 1], one per label: `ValueError`), NaN where the core
says None (one class, no rows), and adaptive ECE over equal-mass bins. Training, evaluation and
the benchmarks all call these functions.

`METRICS` registers each score metric by name with its report title: `score_report`, the
evaluation's tables and means, the recalibration study and `training.fit`'s summary all read it,
so a new metric is one `@metric(...)` function here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from imad import metrics as core
from imad.metrics import N_BINS, CalibrationBins

__all__ = ["METRICS", "N_BINS", "CalibrationBins", "Metric", "adaptive_calibration_error", "auroc",
           "bin_indices", "brier_score", "calibration_bins", "expected_calibration_error", "metric",
           "score_report"]

Score = Callable[[np.ndarray, np.ndarray], float]


@dataclass(frozen=True)
class Metric:
    """A score of 0/1 labels against probabilities, as the reports name and title it."""

    name: str
    title: str
    """Column title in the evaluation report ("ECE", "Brier")."""
    compute: Score


METRICS: dict[str, Metric] = {}
"""Every registered metric by name, in the order reports show them."""


def metric(name: str, title: str) -> Callable[[Score], Score]:
    """Register `function(labels, probabilities) -> float` as the metric `name`."""
    def register(function: Score) -> Score:
        if name in METRICS:
            raise TypeError(f"two metrics named {name!r}")
        METRICS[name] = Metric(name, title, function)
        return function
    return register


def _as_arrays(labels: np.ndarray, probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    p = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    if y.shape != p.shape:
        raise ValueError(f"labels and probabilities differ in length: {y.shape[0]} vs {p.shape[0]}")
    if p.size and (p.min() < 0.0 or p.max() > 1.0 or not np.all(np.isfinite(p))):
        raise ValueError("probabilities must be finite and within [0, 1]")
    return y, p


def bin_indices(probabilities: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Equal-width bin of each probability, as `calibration_curve(strategy="uniform")` assigns."""
    return core.bin_index(probabilities, n_bins)


def calibration_bins(
    labels: np.ndarray, probabilities: np.ndarray, n_bins: int = N_BINS
) -> CalibrationBins:
    """Per-bin counts, accuracy and mean confidence over equal-width bins (empty bins dropped)."""
    return core.calibration_bins(*_as_arrays(labels, probabilities), n_bins)


def _nan_if_none(value: float | None) -> float:
    return math.nan if value is None else value


@metric("ece", "ECE")
def expected_calibration_error(
    labels: np.ndarray, probabilities: np.ndarray, n_bins: int = N_BINS
) -> float:
    """ECE = Σ_b |B_b|/N · |mean(y in b) − mean(p in b)| over `n_bins` equal-width bins."""
    return _nan_if_none(core.ece(*_as_arrays(labels, probabilities), n_bins))


@metric("adaptive_ece", "adaptive ECE")
def adaptive_calibration_error(
    labels: np.ndarray, probabilities: np.ndarray, n_bins: int = N_BINS
) -> float:
    """ECE over equal-mass bins: rows sorted by p (stable), split into `n_bins` near-equal parts."""
    y, p = _as_arrays(labels, probabilities)
    if p.size == 0:
        return math.nan
    order = np.argsort(p, kind="stable")
    parts = [part for part in np.array_split(order, min(n_bins, p.size)) if part.size]
    bins = CalibrationBins(
        counts=np.array([part.size for part in parts]),
        accuracy=np.array([y[part].mean() for part in parts]),
        mean_probability=np.array([p[part].mean() for part in parts]),
    )
    return _nan_if_none(core.ece_of_bins(bins))


@metric("brier", "Brier")
def brier_score(labels: np.ndarray, probabilities: np.ndarray) -> float:
    """Mean squared error of p against the 0/1 label."""
    return _nan_if_none(core.brier(*_as_arrays(labels, probabilities)))


@metric("auroc", "AUROC")
def auroc(labels: np.ndarray, probabilities: np.ndarray) -> float:
    """Area under the ROC curve (equal to scikit-learn's `roc_auc_score`); NaN when the labels
    hold a single class."""
    return _nan_if_none(core.auroc(*_as_arrays(labels, probabilities)))


def score_report(
    labels: np.ndarray, probabilities: np.ndarray, tau: float | None = None
) -> dict[str, float]:
    """Every registered metric (`METRICS`), n and the positive rate (plus the trigger rate
    p < τ when τ is given)."""
    y, p = _as_arrays(labels, probabilities)
    report: dict[str, float] = {name: entry.compute(y, p) for name, entry in METRICS.items()}
    report.update(n=int(p.size), positive_rate=float(y.mean()) if p.size else math.nan)
    if tau is not None:
        report["trigger_rate"] = float(np.mean(p < tau)) if p.size else math.nan
    return report
