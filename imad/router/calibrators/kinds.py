"""The calibrators a checkpoint can hold, one registered class each.

A new calibrator is one class here: `@register`, a `kind`, its parameters as `parameter(row)`
fields, `apply`, and `fit` (the numerics in `imad.router.calibrators.fitting`). Its constraints
row, checkpoint section, loading and model-card line follow from the fields (`base`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from imad.constraints import Real, Texts
from imad.errors import ConfigError
from imad.router.calibrators import fitting
from imad.router.calibrators.base import (
    MAX_PARAMETER,
    PRIOR_FLOOR,
    CalibrationRecord,
    Calibrator,
    logit,
    parameter,
    register,
    shift_prior,
    sigmoid,
)
from imad.router.calibrators.inputs import real_array

PARAMETER = Real(-MAX_PARAMETER, MAX_PARAMETER)
PRIOR = Real(PRIOR_FLOOR, 1 - PRIOR_FLOOR)
MAX_KNOTS = 100_000
KNOTS = Texts(Real(0.0, 1.0), max_items=MAX_KNOTS)


@register
class IdentityCalibrator(Calibrator):
    """The raw score is the probability (every checkpoint written before calibrators existed)."""

    fitted_on: CalibrationRecord | None = None
    kind: ClassVar[str] = "identity"
    labelled: ClassVar[bool] = False

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        return _unit(real_array(raw_scores, "raw_scores"))

    @classmethod
    def fit(cls, raw: np.ndarray, labels: np.ndarray | None, record: CalibrationRecord, *,
            training_prior: float | None) -> IdentityCalibrator:
        return cls(record)


@register
class TemperatureCalibrator(Calibrator):
    """sigmoid(logit(s) / T), one parameter fitted by log loss."""

    temperature: float = parameter(Real(1 / MAX_PARAMETER, MAX_PARAMETER))
    fitted_on: CalibrationRecord | None = None
    kind: ClassVar[str] = "temperature"

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        return sigmoid(logit(real_array(raw_scores, "raw_scores")) / self.temperature)

    @classmethod
    def fit(cls, raw: np.ndarray, labels: np.ndarray | None, record: CalibrationRecord, *,
            training_prior: float | None) -> TemperatureCalibrator:
        return cls(1.0 / fitting.fit_inverse_temperature(logit(raw), labels), record)


@register
class PlattCalibrator(Calibrator):
    """sigmoid(a · logit(s) + b): scikit-learn's `LogisticRegression()` (L2, C = 1, the intercept
    unpenalised) on the logit, so a few labels with one right answer still give finite values."""

    slope: float = parameter(PARAMETER)
    intercept: float = parameter(PARAMETER)
    fitted_on: CalibrationRecord | None = None
    kind: ClassVar[str] = "platt"

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        return sigmoid(self.slope * logit(real_array(raw_scores, "raw_scores")) + self.intercept)

    @property
    def decreasing(self) -> bool:
        return self.slope < 0

    @classmethod
    def fit(cls, raw: np.ndarray, labels: np.ndarray | None, record: CalibrationRecord, *,
            training_prior: float | None) -> PlattCalibrator:
        return cls(*fitting.fit_logistic(logit(raw), labels), record)


@register
class IsotonicCalibrator(Calibrator):
    """A non-decreasing step-linear map through (x, y) knots, clipped outside [x₀, xₙ]: scikit-
    learn's `IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1)`."""

    x_thresholds: tuple[float, ...] = parameter(KNOTS)
    y_thresholds: tuple[float, ...] = parameter(KNOTS)
    fitted_on: CalibrationRecord | None = None
    kind: ClassVar[str] = "isotonic"

    def check(self) -> None:
        xs, ys = self.x_thresholds, self.y_thresholds
        if len(xs) != len(ys):
            raise ConfigError("calibrator.y_thresholds", f"expected one y value per knot, got "
                              f"{len(xs)} knots and {len(ys)} y values")
        if any(b <= a for a, b in zip(xs, xs[1:], strict=False)):
            raise ConfigError("calibrator.x_thresholds", "must be strictly increasing")
        if any(b < a for a, b in zip(ys, ys[1:], strict=False)):
            raise ConfigError("calibrator.y_thresholds", "must be non-decreasing")

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        raw = real_array(raw_scores, "raw_scores")
        clipped = np.clip(raw, self.x_thresholds[0], self.x_thresholds[-1])
        return np.where(np.isfinite(raw), np.interp(clipped, self.x_thresholds, self.y_thresholds), raw)

    @classmethod
    def fit(cls, raw: np.ndarray, labels: np.ndarray | None, record: CalibrationRecord, *,
            training_prior: float | None) -> IsotonicCalibrator:
        return cls(*fitting.fit_isotonic(raw, labels), record)


@register
class BaseRateCalibrator(Calibrator):
    """A constant p: the labels' share of right answers, ignoring the score. Estimated as the
    posterior mean under Jeffreys' Beta(½, ½) prior, (right + ½) / (labels + 1), so labels of one
    class give a small p rather than 0 or 1. What a user gets by counting, and what `auto` keeps
    unless a map beats it beyond chance."""

    rate: float = parameter(PRIOR)
    fitted_on: CalibrationRecord | None = None
    kind: ClassVar[str] = "base_rate"
    both_classes: ClassVar[bool] = False

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        raw = real_array(raw_scores, "raw_scores")
        return np.where(np.isfinite(raw), self.rate, raw)

    @classmethod
    def fit(cls, raw: np.ndarray, labels: np.ndarray | None, record: CalibrationRecord, *,
            training_prior: float | None) -> BaseRateCalibrator:
        return cls(fitting.jeffreys_rate(labels), record)


@register
class PriorShiftCalibrator(Calibrator):
    """Label-free: the traffic's share of right answers is estimated by EM on the raw scores,
    and each score re-weighted from the training prior to that one (Saerens, Latinne &
    Decaestecker 2002, "Adjusting the outputs of a classifier to new a priori probabilities")."""

    training_prior: float = parameter(PRIOR)
    target_prior: float = parameter(PRIOR)
    fitted_on: CalibrationRecord | None = None
    kind: ClassVar[str] = "prior_shift"
    labelled: ClassVar[bool] = False

    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        raw = _unit(real_array(raw_scores, "raw_scores"))
        return np.where(np.isfinite(raw), shift_prior(raw, self.training_prior, self.target_prior), raw)

    @classmethod
    def fit(cls, raw: np.ndarray, labels: np.ndarray | None, record: CalibrationRecord, *,
            training_prior: float | None) -> PriorShiftCalibrator:
        from imad.constraints import check_value

        prior = check_value(training_prior, PRIOR, "training_prior", advice="prior_shift needs the "
                            "router's training accuracy (the share of right answers it was trained on)")
        target = fitting.estimate_target_prior(raw, prior)
        return cls(prior, target, CalibrationRecord(
            cls.kind, record.n_answers, None, record.sources, estimated_accuracy=target))


IDENTITY = IdentityCalibrator()


def _unit(raw: np.ndarray) -> np.ndarray:
    """Finite scores clipped to [0, 1], as the logit and the isotonic knots clip them, so no
    calibrator returns a "probability" of -0.2 for a damaged score; non-finite ones stay."""
    return np.where(np.isfinite(raw), np.clip(raw, 0.0, 1.0), raw)
