"""Calibrators: the router's raw score → a probability a user can trust on their traffic.

The router's p is calibrated on its training distribution only (zero-shot ECE 0.23–0.54 on
other datasets, issue 21). A calibrator maps raw scores to probabilities and is stored, typed,
in the checkpoint with what it was fitted on. The kinds (`kinds`, registered by name in
`CALIBRATORS`): `identity`, `temperature`, `platt`, `isotonic`, `base_rate`, `prior_shift`
(label-free). `auto`, the default, is not a kind but a choice among `base_rate`, `platt` and
`isotonic` for the labels given (`selection`: never a map that is not beyond chance better than
the base rate). `base` holds what they share, `inputs` checks the scores and labels, `fitting`
holds the numerics; this module fits one by name and reads one back from a checkpoint.

A new calibrator is one class in `kinds` (`@register`, `kind`, its `parameter(row)` fields,
`apply`, `fit`) plus its tests: `fit_calibrator`, `calibrator_from_dict`, the constraints row,
the checkpoint section, the model card's parameter line and `imad calibrate --recalibrate`'s
choices (`RECALIBRATION_METHODS`) follow from the class. This package imports no torch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from imad.constraints import Options, check_value
from imad.errors import CheckpointError, ConfigError
from imad.router.calibrators.base import (
    CALIBRATORS,
    SELECTORS,
    CalibrationRecord,
    Calibrator,
    DecreasingCalibratorWarning,
    known_keys,
    mapping,
    parameter_names,
)
from imad.router.calibrators.fitting import estimate_target_prior
from imad.router.calibrators.inputs import check_labels, check_scores
from imad.router.calibrators.kinds import (
    IDENTITY,
    BaseRateCalibrator,
    IdentityCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    PriorShiftCalibrator,
    TemperatureCalibrator,
)
from imad.router.calibrators.selection import choose_calibrator

DEFAULT_METHOD = "auto"
CALIBRATION_METHODS = (*SELECTORS, *CALIBRATORS)
LABELLED_METHODS = tuple(name for name, kind in CALIBRATORS.items() if kind.labelled
                         and name != "identity")
RECALIBRATION_METHODS = tuple(name.replace("_", "-") for name in CALIBRATION_METHODS
                              if name != IdentityCalibrator.kind)
"""`imad calibrate --recalibrate`'s choices, hyphenated as the CLI spells them (`base-rate`): every
method but the identity, which is the router as it is."""
UNLABELLED_METHODS = tuple(name.replace("_", "-") for name, kind in CALIBRATORS.items()
                           if not kind.labelled and name != IdentityCalibrator.kind)
"""The `--recalibrate` choices fitted on unlabelled answers (`prior-shift`)."""


def calibrator_from_dict(data: Any) -> Calibrator:
    """The calibrator a checkpoint's `calibrator` section describes; `CheckpointError` naming
    what is damaged (an unknown kind, a missing or out-of-range parameter, unsorted knots). A
    map that decreases loads, with a `DecreasingCalibratorWarning` saying so."""
    data = mapping(data, "calibrator")
    known_keys(data, ("kind", "parameters", "fitted_on"), "calibrator")
    kind = data.get("kind")
    cls = CALIBRATORS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise CheckpointError(f"calibrator.kind: unknown calibrator {kind!r}; this imad knows "
                              f"{', '.join(CALIBRATORS)}")
    parameters = mapping(data.get("parameters", {}), "calibrator.parameters")
    fitted_on = data.get("fitted_on")
    try:
        record = None if fitted_on is None else CalibrationRecord.from_dict(fitted_on)
    except ConfigError as error:
        raise CheckpointError(f"damaged calibrator: {error}") from None
    if record is not None and record.method != kind:
        raise CheckpointError(f"calibrator.fitted_on.method: {record.method!r} for a {kind} calibrator")
    expected = parameter_names(cls)
    if sorted(parameters) != sorted(expected):
        raise CheckpointError(f"calibrator.parameters: a {kind} calibrator has "
                              f"{list(expected) or 'no parameters'}, got {sorted(parameters)}")
    try:  # each parameter's row: an isotonic calibrator's JSON lists become tuples
        calibrator = cls(**parameters, fitted_on=record)
    except ConfigError as error:
        raise CheckpointError(f"damaged calibrator: {error}") from None
    calibrator.warn_if_decreasing("calibrator")
    return calibrator


def fit_calibrator(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray | None = None,
                   method: str = DEFAULT_METHOD, *, training_prior: float | None = None,
                   sources: Sequence[str] = ()) -> Calibrator:
    """A calibrator of `method` fitted on raw router scores and, for a labelled kind, their 0/1
    labels (1: the answer was right). The default, `auto`, returns the base rate, Platt or
    isotonic calibrator its tests choose (`imad.router.calibrators.selection`), its record
    saying why; it takes labels of one class (then: the base rate). `ConfigError` says what is
    missing or wrong: scores that are not a 1-D sequence of real numbers in [0, 1] (a Fraction,
    a complex, an object or 2-D array, a 400-digit integer), labels that are not 0/1.

    prior_shift needs `training_prior` (the share of right answers in the router's training
    data) and no labels; given labels it still ignores them, so its estimate stays honest.
    """
    method = method.replace("-", "_") if isinstance(method, str) else method
    method = check_value(method, Options(*CALIBRATION_METHODS), "method")
    raw = check_scores(scores)
    if isinstance(sources, (str, bytes)) or not isinstance(sources, (list, tuple)) \
            or not all(isinstance(source, (str, os.PathLike)) for source in sources):
        raise ConfigError("sources", f"expected a list of file or data set names, got {sources!r}"[:160])
    sources = tuple(str(os.fspath(source)) for source in sources)
    if method in SELECTORS:
        y = check_labels(labels, len(raw), method, both_classes=False)
        return choose_calibrator(raw, y, sources)
    kind = CALIBRATORS[method]
    y = check_labels(labels, len(raw), method, both_classes=kind.both_classes) if kind.labelled else None
    record = CalibrationRecord(method, len(raw), None if y is None else int(y.sum()), sources)
    return kind.fit(raw, y, record, training_prior=training_prior)


__all__ = [
    "CALIBRATION_METHODS", "CALIBRATORS", "DEFAULT_METHOD", "IDENTITY", "LABELLED_METHODS",
    "RECALIBRATION_METHODS", "UNLABELLED_METHODS",
    "BaseRateCalibrator", "CalibrationRecord",
    "Calibrator", "DecreasingCalibratorWarning", "IdentityCalibrator", "IsotonicCalibrator",
    "PlattCalibrator", "PriorShiftCalibrator", "TemperatureCalibrator", "calibrator_from_dict",
    "estimate_target_prior", "fit_calibrator",
]
