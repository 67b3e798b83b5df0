"""Calibrators against scikit-learn (the trusted reference) and round trips through their dicts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from imad.router.calibrators import (
    IDENTITY,
    IsotonicCalibrator,
    PlattCalibrator,
    PriorShiftCalibrator,
    TemperatureCalibrator,
    calibrator_from_dict,
    estimate_target_prior,
    fit_calibrator,
)


def _data(seed: int, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = rng.uniform(0.02, 0.98, n)
    labels = (rng.uniform(size=n) < 0.3 + 0.4 * scores).astype(int)
    return scores, labels


def _logit(s: np.ndarray) -> np.ndarray:
    return np.log(s) - np.log1p(-s)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_platt_equals_scikit_learn_logistic_regression_on_the_logit(seed: int) -> None:
    scores, labels = _data(seed)
    ours = fit_calibrator(scores, labels, "platt")
    reference = LogisticRegression(tol=1e-12, max_iter=10_000).fit(_logit(scores).reshape(-1, 1), labels)
    probe = np.linspace(0.001, 0.999, 101)
    expected = reference.predict_proba(_logit(probe).reshape(-1, 1))[:, 1]
    np.testing.assert_allclose(ours.apply(probe), expected, atol=1e-6)


def test_platt_with_one_right_answer_is_finite() -> None:
    scores = np.linspace(0.1, 0.9, 50)
    labels = np.zeros(50, dtype=int)
    labels[-1] = 1
    calibrator = fit_calibrator(scores, labels, "platt")
    assert np.all(np.isfinite(calibrator.apply(scores)))
    assert calibrator.apply(np.array([0.5]))[0] < 0.2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_isotonic_equals_scikit_learn(seed: int) -> None:
    scores, labels = _data(seed, 80)
    scores = np.round(scores, 2)  # ties, pooled the same way
    ours = fit_calibrator(scores, labels, "isotonic")
    reference = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(scores, labels)
    probe = np.concatenate([np.linspace(0, 1, 201), scores])
    np.testing.assert_allclose(ours.apply(probe), reference.predict(probe), atol=1e-6)


def test_temperature_minimises_log_loss() -> None:
    scores, labels = _data(3)
    calibrator = fit_calibrator(scores, labels, "temperature")
    assert isinstance(calibrator, TemperatureCalibrator)

    def loss(t: float) -> float:
        p = 1 / (1 + np.exp(-_logit(scores) / t))
        return float(-np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)))

    best = loss(calibrator.temperature)
    assert best <= loss(calibrator.temperature * 1.01) and best <= loss(calibrator.temperature / 1.01)


def test_prior_shift_recovers_a_known_prior() -> None:
    """Posteriors of a known two-Gaussian model at prior 0.5, traffic drawn at prior 0.2."""
    rng = np.random.default_rng(7)
    n = 20_000
    right = rng.uniform(size=n) < 0.2
    x = np.where(right, rng.normal(1, 1, n), rng.normal(-1, 1, n))
    posterior = 1 / (1 + np.exp(-2 * x))  # exact posterior under equal priors
    assert abs(estimate_target_prior(posterior, 0.5) - right.mean()) < 0.02
    calibrator = fit_calibrator(posterior, method="prior_shift", training_prior=0.5)
    assert isinstance(calibrator, PriorShiftCalibrator)
    assert abs(calibrator.apply(posterior).mean() - right.mean()) < 0.02
    assert calibrator.fitted_on.n_correct is None


def test_prior_shift_at_the_training_prior_is_the_identity() -> None:
    scores = np.array([0.2, 0.5, 0.9])
    calibrator = PriorShiftCalibrator(0.4, 0.4)
    np.testing.assert_allclose(calibrator.apply(scores), scores)


@pytest.mark.parametrize("method", ["identity", "temperature", "platt", "isotonic", "prior_shift"])
def test_round_trip_through_json_is_exact(method: str) -> None:
    scores, labels = _data(4, 60)
    calibrator = fit_calibrator(scores, labels, method, training_prior=0.6, sources=["a.jsonl"])
    again = calibrator_from_dict(json.loads(json.dumps(calibrator.to_dict())))
    assert again == calibrator
    np.testing.assert_array_equal(again.apply(scores), calibrator.apply(scores))


def test_calibrators_are_monotone_and_keep_non_finite_scores_visible() -> None:
    scores, labels = _data(5)
    probe = np.linspace(0, 1, 301)
    for method in ("temperature", "platt", "isotonic"):
        out = fit_calibrator(scores, labels, method).apply(probe)
        assert np.all(np.diff(out) >= -1e-12) and np.all((out >= 0) & (out <= 1))
    for calibrator in (IDENTITY, PlattCalibrator(1.0, 0.0), IsotonicCalibrator((0.0, 1.0), (0.2, 0.8)),
                       TemperatureCalibrator(2.0), PriorShiftCalibrator(0.5, 0.3)):
        assert np.isnan(calibrator.apply(np.array([np.nan]))[0])


def test_describe_says_what_it_was_fitted_on() -> None:
    scores, labels = _data(6, 50)
    text = fit_calibrator(scores, labels, "platt", sources=["mine.jsonl"]).describe()
    assert "50 labelled answers" in text and f"{labels.sum()} right" in text and "mine.jsonl" in text
    shifted = fit_calibrator(scores, method="prior-shift", training_prior=0.5).describe()
    assert "without labels" in shifted and "estimated accuracy" in shifted


def test_every_registered_calibrator_round_trips_and_the_cli_offers_every_fitted_kind() -> None:
    """The registry is the one list: each kind fits, saves and loads back equal, and `imad
    calibrate --recalibrate`'s choices, derived from it, name `auto` and every kind but the
    identity, hyphenated."""
    from imad.router.calibrators import CALIBRATORS, RECALIBRATION_METHODS
    from imad.router.calibrators.base import parameter_names

    scores, labels = _data(8)
    for name, kind in CALIBRATORS.items():
        fitted = fit_calibrator(scores, labels, name, training_prior=0.5)
        assert type(fitted) is kind and fitted.kind == name
        section = json.loads(json.dumps(fitted.to_dict()))
        assert sorted(section["parameters"]) == sorted(parameter_names(kind))
        assert set(kind.constraints) == {*parameter_names(kind), "fitted_on"}
        assert calibrator_from_dict(section) == fitted
    assert RECALIBRATION_METHODS == ("auto", "temperature", "platt", "isotonic", "base-rate",
                                     "prior-shift")
    assert sorted(m.replace("-", "_") for m in RECALIBRATION_METHODS) == sorted(
        ["auto", *(name for name in CALIBRATORS if name != "identity")])
