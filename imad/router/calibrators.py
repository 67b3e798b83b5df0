"""Calibrators: the router's raw score → a probability a user can trust on their traffic (SPEC §14).

The router's p is calibrated on its training distribution only (zero-shot ECE 0.23–0.54 on
other datasets, issue 21). A calibrator maps raw scores to probabilities and is stored, typed,
in the checkpoint with what it was fitted on:

- `identity`: the raw score (every checkpoint written before calibrators existed);
- `temperature`: sigmoid(logit(s) / T), one parameter fitted by log loss;
- `platt`: sigmoid(a · logit(s) + b), scikit-learn's `LogisticRegression()` (L2, C = 1, the
  intercept unpenalised) on the logit, so a few labels with one right answer still give finite
  parameters;
- `isotonic`: scikit-learn's `IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1)`,
  fitted by pool-adjacent-violators;
- `prior_shift`: label-free. The traffic's share of right answers is estimated by EM on the raw
  scores alone, and each score is re-weighted from the training prior to that one (Saerens,
  Latinne & Decaestecker 2002, "Adjusting the outputs of a classifier to new a priori
  probabilities").

Fitting and applying use numpy only, so the runtime needs no scikit-learn; the tests check
Platt and isotonic against scikit-learn to 1e-6.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from imad.constraints import (
    Constraints,
    InstanceOf,
    Integer,
    Options,
    Real,
    Text,
    Texts,
    check_fields,
    check_value,
)
from imad.errors import CheckpointError, ConfigError

CALIBRATION_METHODS = ("identity", "temperature", "platt", "isotonic", "prior_shift")
LABELLED_METHODS = ("temperature", "platt", "isotonic")
MIN_LABELLED_ANSWERS = 10
"""Fewest labelled answers a labelled method is fitted on; fewer give a calibrator that is noise."""
SCORE_EPSILON = 1e-7
"""Raw scores are clipped to [ε, 1 − ε] before the logit, so a score of exactly 0 or 1 stays finite."""
MAX_PARAMETER = 1e3
"""Bound on |slope|, |intercept|, 1/T: beyond it sigmoid saturates for every real score anyway."""
PLATT_C = 1.0
"""scikit-learn's default inverse L2 strength, so Platt equals `LogisticRegression()`."""
MAX_KNOTS = 100_000
PRIOR_FLOOR = 1e-4
"""Priors are kept in [1e-4, 1 − 1e-4]: at 0 or 1 every score would collapse to that class."""
MAX_ANSWERS = 10**12

PARAMETER = Real(-MAX_PARAMETER, MAX_PARAMETER)
PRIOR = Real(PRIOR_FLOOR, 1 - PRIOR_FLOOR)
KNOTS = Texts(Real(0.0, 1.0), max_items=MAX_KNOTS)
ANSWERS = Integer(0, MAX_ANSWERS)


def _label(name: str) -> str:
    return f"calibrator.{name}"


@dataclass(frozen=True)
class CalibrationRecord:
    """What a calibrator was fitted on, stored beside it and shown in the model card."""

    method: str
    n_answers: int
    n_correct: int | None = None
    """Right answers among them; None for prior_shift, which is fitted without labels."""
    sources: tuple[str, ...] = ()
    """The corpus files or dataset names it was fitted on."""
    estimated_accuracy: float | None = None
    """prior_shift only: the traffic's share of right answers estimated from the scores."""

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "n_answers": self.n_answers, "n_correct": self.n_correct,
                "sources": list(self.sources), "estimated_accuracy": self.estimated_accuracy}

    constraints: ClassVar[Constraints] = {
        "method": Options(*CALIBRATION_METHODS),
        "n_answers": ANSWERS,
        "n_correct": (None, ANSWERS),
        "sources": Texts(Text(blank=True), max_items=MAX_ANSWERS, empty=True),
        "estimated_accuracy": (None, Real(0.0, 1.0)),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=lambda name: f"calibrator.fitted_on.{name}")
        if self.n_correct is not None and self.n_correct > self.n_answers:
            raise ConfigError("calibrator.fitted_on.n_correct", f"{self.n_correct} right answers "
                              f"among {self.n_answers}")

    @classmethod
    def from_dict(cls, data: Any) -> CalibrationRecord:
        """The record of a checkpoint's `calibrator.fitted_on`; `CheckpointError` for unknown
        keys, `ConfigError` naming a bad value."""
        data = _mapping(data, "calibrator.fitted_on")
        _known_keys(data, ("method", "n_answers", "n_correct", "sources", "estimated_accuracy"),
                    "calibrator.fitted_on")
        sources = data.get("sources", [])
        check_value(sources, InstanceOf(list, "a list of strings"), "calibrator.fitted_on.sources")
        return cls(data.get("method"), data.get("n_answers"), data.get("n_correct"), sources,
                   data.get("estimated_accuracy"))


class Calibrator(ABC):
    """Maps raw router scores in [0, 1] to probabilities in [0, 1], monotone non-decreasing."""

    kind: ClassVar[str]
    fitted_on: CalibrationRecord | None

    @abstractmethod
    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        """Probabilities for raw scores of shape (n,); a non-finite score stays non-finite (the
        policy escalates it), so a calibrator never hides a damaged score."""

    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """The fitted parameters, JSON-safe, as `calibrator_from_dict` reads them back."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "parameters": self.parameters(),
                "fitted_on": None if self.fitted_on is None else self.fitted_on.to_dict()}

    def describe(self) -> str:
        """One line for the model card and the CLI, e.g. "platt on 50 labelled answers (…)"."""
        if self.fitted_on is None:
            return f"{self.kind} (not fitted: the raw score is the probability)"
        record = self.fitted_on
        labels = ("without labels" if record.n_correct is None
                  else f"on {record.n_answers} labelled answers, {record.n_correct} right")
        where = f" from {', '.join(record.sources)}" if record.sources else ""
        estimate = ("" if record.estimated_accuracy is None
                    else f"; estimated accuracy of that traffic {record.estimated_accuracy:.3f}")
        size = f" of {record.n_answers} answers" if record.n_correct is None else ""
        return f"{self.kind} fitted {labels}{size}{where}{estimate}"


@dataclass(frozen=True)
class IdentityCalibrator(Calibrator):
    kind: ClassVar[str] = "identity"
    fitted_on: CalibrationRecord | None = None

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        return np.array(raw_scores, dtype=np.float64)

    def parameters(self) -> dict[str, Any]:
        return {}


@dataclass(frozen=True)
class TemperatureCalibrator(Calibrator):
    temperature: float
    fitted_on: CalibrationRecord | None = None
    kind: ClassVar[str] = "temperature"
    constraints: ClassVar[Constraints] = {
        "temperature": Real(1 / MAX_PARAMETER, MAX_PARAMETER),
        "fitted_on": (None, InstanceOf(CalibrationRecord)),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=_label)

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        return _sigmoid(_logit(raw_scores) / self.temperature)

    def parameters(self) -> dict[str, Any]:
        return {"temperature": self.temperature}


@dataclass(frozen=True)
class PlattCalibrator(Calibrator):
    slope: float
    intercept: float
    fitted_on: CalibrationRecord | None = None
    kind: ClassVar[str] = "platt"
    constraints: ClassVar[Constraints] = {
        "slope": PARAMETER,
        "intercept": PARAMETER,
        "fitted_on": (None, InstanceOf(CalibrationRecord)),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=_label)

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        return _sigmoid(self.slope * _logit(raw_scores) + self.intercept)

    def parameters(self) -> dict[str, Any]:
        return {"slope": self.slope, "intercept": self.intercept}


@dataclass(frozen=True)
class IsotonicCalibrator(Calibrator):
    """A non-decreasing step-linear map through (x, y) knots, clipped outside [x₀, xₙ]."""

    x_thresholds: tuple[float, ...]
    y_thresholds: tuple[float, ...]
    fitted_on: CalibrationRecord | None = None
    kind: ClassVar[str] = "isotonic"
    constraints: ClassVar[Constraints] = {
        "x_thresholds": KNOTS,
        "y_thresholds": KNOTS,
        "fitted_on": (None, InstanceOf(CalibrationRecord)),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=_label)
        xs, ys = self.x_thresholds, self.y_thresholds
        if len(xs) != len(ys):
            raise ConfigError("calibrator.y_thresholds", f"expected one y value per knot, got "
                              f"{len(xs)} knots and {len(ys)} y values")
        if any(b <= a for a, b in zip(xs, xs[1:], strict=False)):
            raise ConfigError("calibrator.x_thresholds", "must be strictly increasing")
        if any(b < a for a, b in zip(ys, ys[1:], strict=False)):
            raise ConfigError("calibrator.y_thresholds", "must be non-decreasing")

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        raw = np.asarray(raw_scores, dtype=np.float64)
        clipped = np.clip(raw, self.x_thresholds[0], self.x_thresholds[-1])
        return np.where(np.isfinite(raw), np.interp(clipped, self.x_thresholds, self.y_thresholds), raw)

    def parameters(self) -> dict[str, Any]:
        return {"x_thresholds": list(self.x_thresholds), "y_thresholds": list(self.y_thresholds)}


@dataclass(frozen=True)
class PriorShiftCalibrator(Calibrator):
    """Re-weights each score from the training prior to the target traffic's (Saerens et al.)."""

    training_prior: float
    target_prior: float
    fitted_on: CalibrationRecord | None = None
    kind: ClassVar[str] = "prior_shift"
    constraints: ClassVar[Constraints] = {
        "training_prior": PRIOR,
        "target_prior": PRIOR,
        "fitted_on": (None, InstanceOf(CalibrationRecord)),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=_label)

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        return _shift_prior(np.asarray(raw_scores, dtype=np.float64), self.training_prior,
                            self.target_prior)

    def parameters(self) -> dict[str, Any]:
        return {"training_prior": self.training_prior, "target_prior": self.target_prior}


_KINDS: dict[str, type[Calibrator]] = {
    cls.kind: cls for cls in (IdentityCalibrator, TemperatureCalibrator, PlattCalibrator,
                              IsotonicCalibrator, PriorShiftCalibrator)
}
IDENTITY = IdentityCalibrator()


def calibrator_from_dict(data: Any) -> Calibrator:
    """The calibrator a checkpoint's `calibrator` section describes; `CheckpointError` naming
    what is damaged (an unknown kind, a missing or out-of-range parameter, unsorted knots)."""
    data = _mapping(data, "calibrator")
    _known_keys(data, ("kind", "parameters", "fitted_on"), "calibrator")
    kind = data.get("kind")
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise CheckpointError(f"calibrator.kind: unknown calibrator {kind!r}; this imad knows "
                              f"{', '.join(CALIBRATION_METHODS)}")
    parameters = _mapping(data.get("parameters", {}), "calibrator.parameters")
    fitted_on = data.get("fitted_on")
    try:
        record = None if fitted_on is None else CalibrationRecord.from_dict(fitted_on)
    except ConfigError as error:
        raise CheckpointError(f"damaged calibrator: {error}") from None
    if record is not None and record.method != kind:
        raise CheckpointError(f"calibrator.fitted_on.method: {record.method!r} for a {kind} calibrator")
    expected = {IdentityCalibrator: (), TemperatureCalibrator: ("temperature",),
                PlattCalibrator: ("slope", "intercept"),
                IsotonicCalibrator: ("x_thresholds", "y_thresholds"),
                PriorShiftCalibrator: ("training_prior", "target_prior")}[cls]
    if sorted(parameters) != sorted(expected):
        raise CheckpointError(f"calibrator.parameters: a {kind} calibrator has "
                              f"{list(expected) or 'no parameters'}, got {sorted(parameters)}")
    try:  # the parameters' rows: an isotonic calibrator's JSON lists become tuples
        return cls(**parameters, fitted_on=record)
    except ConfigError as error:
        raise CheckpointError(f"damaged calibrator: {error}") from None


def fit_calibrator(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray | None = None,
                   method: str = "platt", *, training_prior: float | None = None,
                   sources: Sequence[str] = ()) -> Calibrator:
    """A calibrator of `method` fitted on raw router scores and, except for prior_shift, their
    0/1 labels (1: the answer was right). `ConfigError` says what is missing or wrong.

    prior_shift needs `training_prior` (the share of right answers in the router's training
    data) and no labels; given labels it still ignores them, so its estimate stays honest.
    """
    method = method.replace("-", "_") if isinstance(method, str) else method
    method = check_value(method, Options(*CALIBRATION_METHODS), "method")
    raw = _scores(scores)
    sources = tuple(str(source) for source in sources)
    if method == "identity":
        return IdentityCalibrator(CalibrationRecord("identity", len(raw), None, sources))
    if method == "prior_shift":
        prior = check_value(training_prior, PRIOR, "training_prior", advice="prior_shift needs the "
                            "router's training accuracy (the share of right answers it was trained on)")
        target = estimate_target_prior(raw, prior)
        return PriorShiftCalibrator(prior, target, CalibrationRecord(
            "prior_shift", len(raw), None, sources, estimated_accuracy=target))
    y = _labels(labels, len(raw), method)
    record = CalibrationRecord(method, len(raw), int(y.sum()), sources)
    x = _logit(raw)
    if method == "temperature":
        return TemperatureCalibrator(1.0 / _fit_inverse_temperature(x, y), record)
    if method == "platt":
        slope, intercept = _fit_logistic(x, y)
        return PlattCalibrator(slope, intercept, record)
    knots_x, knots_y = _fit_isotonic(raw, y)
    return IsotonicCalibrator(knots_x, knots_y, record)


def estimate_target_prior(raw: np.ndarray, training_prior: float, *, tolerance: float = 1e-10,
                          max_iterations: int = 10_000) -> float:
    """Saerens et al.'s EM: the prior π under which the re-weighted scores average to π."""
    prior = training_prior
    for _ in range(max_iterations):
        updated = float(np.clip(_shift_prior(raw, training_prior, prior).mean(),
                                PRIOR_FLOOR, 1 - PRIOR_FLOOR))
        if abs(updated - prior) < tolerance:
            return updated
        prior = updated
    return prior


# --- fitting ---------------------------------------------------------------------------------------


def _fit_logistic(x: np.ndarray, y: np.ndarray, *, max_iterations: int = 200) -> tuple[float, float]:
    """Newton's method on C·Σ log loss + ½ slope² (the intercept unpenalised, as lbfgs does)."""
    slope, intercept = 0.0, 0.0
    design = np.column_stack([x, np.ones_like(x)])
    for _ in range(max_iterations):
        p = _sigmoid(slope * x + intercept)
        gradient = PLATT_C * design.T @ (p - y) + np.array([slope, 0.0])
        weights = np.maximum(p * (1 - p), 1e-12)
        hessian = PLATT_C * (design.T * weights) @ design + np.diag([1.0, 0.0])
        step = np.linalg.solve(hessian + np.eye(2) * 1e-12, gradient)
        slope, intercept = slope - step[0], intercept - step[1]
        if np.max(np.abs(step)) < 1e-13:
            break
    return (float(np.clip(slope, -MAX_PARAMETER, MAX_PARAMETER)),
            float(np.clip(intercept, -MAX_PARAMETER, MAX_PARAMETER)))


def _fit_inverse_temperature(x: np.ndarray, y: np.ndarray) -> float:
    """1/T minimising log loss of sigmoid(x / T), by Newton on the convex 1-D problem, bounded."""
    inverse = 1.0
    for _ in range(200):
        p = _sigmoid(inverse * x)
        gradient = float(x @ (p - y))
        curvature = float((x * x) @ (p * (1 - p)))
        if curvature <= 1e-300:
            break
        step = gradient / curvature
        inverse = float(np.clip(inverse - step, 1 / MAX_PARAMETER, MAX_PARAMETER))
        if abs(step) < 1e-13:
            break
    return inverse


def _fit_isotonic(raw: np.ndarray, y: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Pool-adjacent-violators on the unique scores (tied scores pooled first, as scikit-learn)."""
    unique, inverse, counts = np.unique(raw, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    blocks: list[list[float]] = []  # [sum of y, weight, number of unique points]
    for mean, count in zip(means, counts, strict=True):
        blocks.append([mean * count, float(count), 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, weight, size = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += weight
            blocks[-1][2] += size
    fitted = np.concatenate([[block[0] / block[1]] * block[2] for block in blocks])
    return tuple(float(v) for v in unique), tuple(float(v) for v in np.clip(fitted, 0.0, 1.0))


# --- checks and numerics ---------------------------------------------------------------------------


def _scores(scores: Any) -> np.ndarray:
    try:
        raw = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError("scores", "expected a sequence of numbers in [0, 1]") from None
    if raw.ndim != 1 or len(raw) == 0:
        raise ConfigError("scores", f"expected a non-empty 1-D sequence, got shape {raw.shape}")
    bad = np.nonzero(~np.isfinite(raw) | (raw < 0) | (raw > 1))[0]
    if len(bad):
        raise ConfigError("scores", f"{len(bad)} scores are not finite numbers in [0, 1] "
                          f"(first at index {int(bad[0])}: {raw[bad[0]]})")
    return raw


def _labels(labels: Any, n: int, method: str) -> np.ndarray:
    if labels is None:
        raise ConfigError("labels", f"{method} needs 0/1 labels (1: the answer was right); "
                          "prior_shift needs none")
    values = list(labels) if not isinstance(labels, np.ndarray) else labels.tolist()
    if len(values) != n:
        raise ConfigError("labels", f"{len(values)} labels for {n} scores")
    if not all(type(v) in (bool, int, float) and v in (0, 1) for v in values):
        first = next(v for v in values if not (type(v) in (bool, int, float) and v in (0, 1)))
        raise ConfigError("labels", f"expected 0 or 1 (or true/false), got {first!r}")
    y = np.array(values, dtype=np.float64)
    if n < MIN_LABELLED_ANSWERS:
        raise ConfigError("labels", f"{method} needs at least {MIN_LABELLED_ANSWERS} labelled answers, "
                          f"got {n}")
    if y.min() == y.max():
        which = "right" if y[0] == 1 else "wrong"
        raise ConfigError("labels", f"all {n} answers are {which}: {method} needs both right and "
                          "wrong answers (label more, or use prior_shift)")
    return y


def _logit(raw_scores: np.ndarray) -> np.ndarray:
    raw = np.asarray(raw_scores, dtype=np.float64)
    clipped = np.clip(raw, SCORE_EPSILON, 1 - SCORE_EPSILON)
    return np.where(np.isfinite(raw), np.log(clipped) - np.log1p(-clipped), raw)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.where(z >= 0, 1 / (1 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1 + np.exp(-np.abs(z))))


def _shift_prior(raw: np.ndarray, training_prior: float, target_prior: float) -> np.ndarray:
    right = raw * (target_prior / training_prior)
    wrong = (1 - raw) * ((1 - target_prior) / (1 - training_prior))
    with np.errstate(invalid="ignore", divide="ignore"):
        return right / (right + wrong)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CheckpointError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _known_keys(data: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        raise CheckpointError(f"{where}: unknown keys {unknown}")


__all__ = [
    "CALIBRATION_METHODS", "IDENTITY", "CalibrationRecord", "Calibrator", "IdentityCalibrator",
    "IsotonicCalibrator", "PlattCalibrator", "PriorShiftCalibrator", "TemperatureCalibrator",
    "calibrator_from_dict", "estimate_target_prior", "fit_calibrator",
]
