"""How unlike the router's training rows an answer is: an out-of-distribution score.

A router scores any feature vector, including ones from traffic it never saw (on a held-out
yes/no dataset the shipped router's AUROC is 0.37). These detectors score how far a *scaled*
feature vector (the router's `(x − mean) / scale`) lies from the training rows, and flag it when
the score is above the 99th percentile of the validation split's scores: by construction about
1% of in-distribution answers are flagged, and a far larger share of unfamiliar ones.

Two detectors, compared in benchmarks/bench_budget.py:
- `MahalanobisOOD`: the Mahalanobis distance to the training mean under a Ledoit–Wolf shrunk
  covariance. It sees combinations (a long critique with few entities) that no single feature
  shows. Shrinkage because 41 correlated count features, one-hots among them, make the sample
  covariance ill-conditioned; Ledoit–Wolf chooses the amount from the data, no tuning.
- `QuantileRangeOOD`: the largest distance, over features, outside the range that held the
  middle 99% of the training rows ([q0.5%, q99.5%] per feature), in training standard deviations
  (the features are already standardised). It names the feature that is out of range and
  ignores heavy tails that inflate a covariance, but misses unusual combinations of usual values.
  The largest excursion rather than the number of features outside: a count takes few distinct
  values, so its 99th percentile sits on a tie and the flagged share cannot be held near 1%.

Everything here is numpy (fitting included: `ledoit_wolf` equals scikit-learn's, see the
tests), so scoring needs no scikit-learn or torch. `to_dict`/`ood_from_dict` store a detector
as JSON values in a checkpoint and check it on the way back (`CheckpointError`).
Quantiles use `numpy.quantile(method="inverted_cdf")`, an observed value, as the trigger budget
does (`imad.decide.budget`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from imad.errors import CheckpointError, FeatureError

FLAG_PERCENTILE = 99.0
"""The flag threshold is this percentile of the validation split's scores."""

RANGE_COVERAGE = 0.99
"""`QuantileRangeOOD` keeps the middle 99% of each training feature: [q0.5%, q99.5%]."""

QUANTILE_METHOD = "inverted_cdf"

MAX_STATISTIC_MAGNITUDE = 1e6
"""Bound on every stored statistic and on the threshold, as on the scaler (`imad.router.config`):
they describe standardised features (mean ≈ 0, variances ≤ 1, shipped thresholds ≈ 21), and a
mean of 1e200, a covariance × 1e300 or a threshold of 1e308 (which never flags) is damage."""



@dataclass(frozen=True, eq=False)
class OODDetector(ABC):
    """The shared procedure: score rows, flag those above `threshold`, save as JSON values."""

    threshold: float
    """Flag a row when its score is above this (the validation split's 99th percentile)."""

    method: ClassVar[str]

    @property
    @abstractmethod
    def n_features(self) -> int:
        """How many scaled features a row has."""

    def score(self, scaled: np.ndarray) -> np.ndarray:
        """The OOD score of each row of scaled features, shape (n, d) → (n,); higher is stranger."""
        return self._score(self._check_rows(scaled))

    def flag(self, scaled: np.ndarray) -> np.ndarray:
        """True for each row whose score is above the threshold."""
        return self.score(scaled) > self.threshold

    def to_dict(self) -> dict[str, Any]:
        """JSON values that `ood_from_dict` rebuilds this detector from."""
        return {"method": self.method, "threshold": self.threshold,
                "threshold_rule": f"validation split's {FLAG_PERCENTILE:g}th percentile "
                                  f"({QUANTILE_METHOD})",
                **{key: value.tolist() if isinstance(value, np.ndarray) else value
                   for key, value in self._arrays().items()}}

    def _check_rows(self, scaled: np.ndarray) -> np.ndarray:
        rows = np.asarray(scaled, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[1] != self.n_features:
            raise FeatureError(f"expected scaled features of shape (n, {self.n_features}), "
                               f"got {rows.shape}")
        if not np.all(np.isfinite(rows)):
            raise FeatureError("scaled features hold NaN or infinite values")
        return rows

    @abstractmethod
    def _score(self, rows: np.ndarray) -> np.ndarray:
        """Each checked row's score: the larger, the less like the training rows."""

    @abstractmethod
    def _arrays(self) -> dict[str, Any]:
        """The statistics `to_dict` saves, by name."""


@dataclass(frozen=True, eq=False)
class MahalanobisOOD(OODDetector):
    """Mahalanobis distance to the training mean under a Ledoit–Wolf shrunk covariance."""

    mean: np.ndarray
    covariance: np.ndarray
    shrinkage: float

    method: ClassVar[str] = "mahalanobis"

    def __post_init__(self) -> None:
        # The precision is derived, not stored: a checkpoint holds what it is computed from.
        object.__setattr__(self, "_precision", np.linalg.inv(self.covariance))

    @property
    def n_features(self) -> int:
        return int(self.mean.size)

    def _score(self, rows: np.ndarray) -> np.ndarray:
        centred = rows - self.mean
        squared = np.einsum("ij,jk,ik->i", centred, self._precision, centred)
        return np.sqrt(np.maximum(squared, 0.0))

    def _arrays(self) -> dict[str, Any]:
        return {"mean": self.mean, "covariance": self.covariance, "shrinkage": self.shrinkage}


@dataclass(frozen=True, eq=False)
class QuantileRangeOOD(OODDetector):
    """Largest excursion outside the training rows' per-feature [q0.5%, q99.5%] range."""

    lower: np.ndarray
    upper: np.ndarray

    method: ClassVar[str] = "quantile_range"

    @property
    def n_features(self) -> int:
        return int(self.lower.size)

    def _score(self, rows: np.ndarray) -> np.ndarray:
        return self.excursions(rows).max(axis=1)

    def excursions(self, rows: np.ndarray) -> np.ndarray:
        """Per row and feature, how far outside [lower, upper] it lies (0 inside)."""
        return np.maximum(np.maximum(self.lower - rows, rows - self.upper), 0.0)

    def _arrays(self) -> dict[str, Any]:
        return {"lower": self.lower, "upper": self.upper}


# --- fitting ----------------------------------------------------------------------------------


def ledoit_wolf(rows: np.ndarray) -> tuple[np.ndarray, float]:
    """The Ledoit–Wolf shrunk covariance of `rows` and its shrinkage (Ledoit & Wolf, 2004).

    (1 − s)·S + s·(trace(S)/d)·I with S the empirical covariance (divided by n) and s the
    estimated optimal shrinkage: the same numbers as `sklearn.covariance.LedoitWolf`.
    """
    centred = np.asarray(rows, dtype=np.float64) - np.mean(rows, axis=0)
    n, d = centred.shape
    empirical = centred.T @ centred / n
    squared = centred**2
    mu = float(np.sum(squared) / n / d)
    delta = float(np.sum(empirical**2))
    beta = (float(np.sum(squared.T @ squared)) / n - delta) / (d * n)
    delta = (delta - 2.0 * mu * float(np.trace(empirical)) + d * mu**2) / d
    beta = min(beta, delta)
    shrinkage = 0.0 if beta == 0 else beta / delta
    covariance = (1.0 - shrinkage) * empirical + shrinkage * mu * np.eye(d)
    return covariance, shrinkage


def fit_mahalanobis(train_scaled: np.ndarray, validation_scaled: np.ndarray) -> MahalanobisOOD:
    """Fit the mean and shrunk covariance on the training rows, the threshold on validation."""
    train = _check_fit_rows("train_scaled", train_scaled)
    covariance, shrinkage = ledoit_wolf(train)
    unthresholded = MahalanobisOOD(0.0, np.mean(train, axis=0), covariance, float(shrinkage))
    return MahalanobisOOD(_flag_threshold(unthresholded, validation_scaled),
                          unthresholded.mean, covariance, float(shrinkage))


def fit_quantile_range(train_scaled: np.ndarray, validation_scaled: np.ndarray) -> QuantileRangeOOD:
    """Fit the per-feature range on the training rows, the threshold on validation."""
    train = _check_fit_rows("train_scaled", train_scaled)
    tail = (1.0 - RANGE_COVERAGE) / 2.0
    lower, upper = np.quantile(train, [tail, 1.0 - tail], axis=0, method=QUANTILE_METHOD)
    unthresholded = QuantileRangeOOD(0.0, lower, upper)
    return QuantileRangeOOD(_flag_threshold(unthresholded, validation_scaled), lower, upper)


def _flag_threshold(detector: OODDetector, validation_scaled: np.ndarray) -> float:
    scores = detector.score(_check_fit_rows("validation_scaled", validation_scaled))
    return float(np.quantile(scores, FLAG_PERCENTILE / 100.0, method=QUANTILE_METHOD))


def _check_fit_rows(name: str, rows: np.ndarray) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] < 1:
        raise FeatureError(f"{name}: expected a matrix of at least 2 scaled feature rows, "
                           f"got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise FeatureError(f"{name}: holds NaN or infinite values")
    return matrix


# --- loading ----------------------------------------------------------------------------------


def ood_from_dict(data: Any, n_features: int | None = None, where: str = "ood") -> OODDetector:
    """Rebuild a detector saved with `to_dict`, checking every value (`CheckpointError`).

    `n_features` is the router's input width the detector must match; `where` names the
    place in config.json for the error message.
    """
    if not isinstance(data, dict):
        raise CheckpointError(f"{where}: expected an object, got {type(data).__name__}")
    method = data.get("method")
    if method not in _METHODS:
        raise CheckpointError(f"{where}.method: expected one of {sorted(_METHODS)}, got {method!r}")
    threshold = _finite_number(data, "threshold", where)
    if not 0.0 <= threshold <= MAX_STATISTIC_MAGNITUDE:
        raise CheckpointError(f"{where}.threshold: an OOD score in [0, {MAX_STATISTIC_MAGNITUDE:g}] "
                              f"(a threshold beyond it never flags), got {threshold!r}")
    if method == MahalanobisOOD.method:
        mean = _finite_array(data, "mean", where, ndim=1)
        d = mean.size
        covariance = _finite_array(data, "covariance", where, ndim=2)
        if covariance.shape != (d, d):
            raise CheckpointError(f"{where}.covariance: expected shape ({d}, {d}) to match the "
                                  f"mean, got {covariance.shape}")
        if not np.allclose(covariance, covariance.T) or not _positive_definite(covariance):
            raise CheckpointError(f"{where}.covariance: not a symmetric positive definite matrix")
        # With entries ≤ 1e6 this also bounds the condition number (≤ 1e12 · d), so the
        # precision cannot turn a finite row's score into ±inf or NaN.
        eigenvalues = np.linalg.eigvalsh(covariance)
        if eigenvalues[0] < 1.0 / MAX_STATISTIC_MAGNITUDE:
            raise CheckpointError(f"{where}.covariance: a variance of {eigenvalues[0]:.3g} along "
                                  f"some direction, under {1.0 / MAX_STATISTIC_MAGNITUDE:g} (the "
                                  "shrinkage keeps every one near or above its share of the mean "
                                  "variance)")
        shrinkage = _finite_number(data, "shrinkage", where)
        if not 0.0 <= shrinkage <= 1.0:
            raise CheckpointError(f"{where}.shrinkage: must lie in [0, 1], got {shrinkage!r}")
        detector: OODDetector = MahalanobisOOD(threshold, mean, covariance, shrinkage)
    else:
        lower = _finite_array(data, "lower", where, ndim=1)
        upper = _finite_array(data, "upper", where, ndim=1)
        if lower.shape != upper.shape or np.any(lower > upper):
            raise CheckpointError(f"{where}.lower/upper: expected two equal-length vectors with "
                                  "lower ≤ upper in every feature")
        detector = QuantileRangeOOD(threshold, lower, upper)
    if n_features is not None and detector.n_features != n_features:
        raise CheckpointError(f"{where}: statistics of {detector.n_features} features for a router "
                              f"with {n_features}")
    return detector


_METHODS = {cls.method: cls for cls in (MahalanobisOOD, QuantileRangeOOD)}


def _finite_number(data: dict[str, Any], key: str, where: str) -> float:
    value = data.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
        raise CheckpointError(f"{where}.{key}: expected a finite number of sane magnitude, got "
                              f"an integer of {value.bit_length()} bits")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CheckpointError(f"{where}.{key}: expected a finite number, got {str(value)[:40]!r}")
    return float(value)


def _finite_array(data: dict[str, Any], key: str, where: str, *, ndim: int) -> np.ndarray:
    if key not in data:
        raise CheckpointError(f"{where}.{key}: missing")
    odd = _first_non_number(data[key])
    if odd is not None:  # numpy would read "1.5" and true as numbers
        raise CheckpointError(f"{where}.{key}: not a numeric array (holds {odd})")
    try:
        array = np.asarray(data[key], dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as error:  # OverflowError: a 400-digit int
        raise CheckpointError(f"{where}.{key}: not a numeric array ({error})") from None
    if array.ndim != ndim or array.size == 0:
        raise CheckpointError(f"{where}.{key}: expected a non-empty {ndim}-d array, got shape "
                              f"{array.shape}")
    if not np.all(np.isfinite(array)):
        raise CheckpointError(f"{where}.{key}: holds NaN or infinite values")
    if float(np.max(np.abs(array))) > MAX_STATISTIC_MAGNITUDE:
        raise CheckpointError(f"{where}.{key}: holds values beyond ±{MAX_STATISTIC_MAGNITUDE:g} "
                              "(the statistics of standardised features are far smaller)")
    return array


def _first_non_number(value: Any) -> str | None:
    """The repr of the first entry of a (nested) list that is not an int or float (a string, a
    boolean, null, a list where a number belongs); None when every entry is a number."""
    try:
        entries = np.asarray(value, dtype=object).reshape(-1)
    except ValueError:  # ragged: the float read below names it
        return None
    odd = [v for v in entries if isinstance(v, bool) or not isinstance(v, (int, float))]
    return repr(odd[0])[:40] if odd else None


def _positive_definite(matrix: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return False
    return True
