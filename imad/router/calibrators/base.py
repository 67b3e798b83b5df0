"""What every calibrator shares: the registry, the record of what it was fitted on, the numerics
(logit, sigmoid, prior shift) and the checkpoint section's helpers; the scores it is
given are checked in `imad.router.calibrators.inputs`.

A calibrator is one frozen dataclass registered with `@register`: its parameters are its fields,
each declared once with `parameter(row)` (the row of `imad.constraints` that checks it). The
constraints table, the checkpoint's `parameters` object, what `calibrator_from_dict` expects
and the model card's parameter line are all derived from those fields.
"""

from __future__ import annotations

import numbers
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

import numpy as np

from imad.constraints import (
    Allowed,
    Constraint,
    Constraints,
    InstanceOf,
    Integer,
    Options,
    Real,
    Refused,
    Text,
    Texts,
    check_fields,
    check_value,
)
from imad.errors import CheckpointError, ConfigError
from imad.router.calibrators.inputs import is_real

SCORE_EPSILON = 1e-7
"""Raw scores are clipped to [ε, 1 − ε] before the logit, so a score of exactly 0 or 1 stays finite."""
MAX_PARAMETER = 1e3
"""Bound on |slope|, |intercept|, 1/T: beyond it sigmoid saturates for every real score anyway."""
PRIOR_FLOOR = 1e-4
"""Priors are kept in [1e-4, 1 − 1e-4]: at 0 or 1 every score would collapse to that class."""
MAX_ANSWERS = 10**12
ANSWERS = Integer(0, MAX_ANSWERS)
SELECTORS = ("auto",)
"""Methods that choose a kind for the labels given rather than being one (`selection`)."""

CALIBRATORS: dict[str, type[Calibrator]] = {}
"""Every calibrator kind by name, in registration order: what checkpoints and `fit_calibrator`
accept (`@register` adds one)."""


class DecreasingCalibratorWarning(UserWarning):
    """A loaded calibrator maps higher raw scores to lower p (a Platt slope below 0)."""


class _RegisteredKind(Constraint):
    """One of the registered calibrator names, read from the registry when checked."""

    def admit(self, value: Any) -> str:
        if not isinstance(value, str) or value not in CALIBRATORS:
            raise Refused
        return value

    def parse(self, text: str) -> str:
        return text.strip()

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(name) for name in CALIBRATORS)


def label(name: str) -> str:
    return f"calibrator.{name}"


@dataclass(frozen=True)
class CalibrationRecord:
    """What a calibrator was fitted on, stored beside it and shown in the model card."""

    method: str
    n_answers: int
    n_correct: int | None = None
    """Right answers among them; None for a calibrator fitted without labels."""
    sources: tuple[str, ...] = ()
    """The corpus files or dataset names it was fitted on."""
    estimated_accuracy: float | None = None
    """prior_shift only: the traffic's share of right answers estimated from the scores."""
    chosen_by: str | None = None
    """"auto" when this kind was chosen for the labels rather than named (`selection`)."""
    reason: str | None = None
    """Why `chosen_by` chose this kind, in words (the tests and cross-validated log losses)."""

    constraints: ClassVar[Constraints] = {
        "method": _RegisteredKind(),
        "n_answers": ANSWERS,
        "n_correct": (None, ANSWERS),
        "sources": Texts(Text(blank=True), max_items=MAX_ANSWERS, empty=True),
        "estimated_accuracy": (None, Real(0.0, 1.0)),
        "chosen_by": (None, Options(*SELECTORS)),
        "reason": (None, Text()),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=lambda name: f"calibrator.fitted_on.{name}")
        if self.n_correct is not None and self.n_correct > self.n_answers:
            raise ConfigError("calibrator.fitted_on.n_correct", f"{self.n_correct} right answers "
                              f"among {self.n_answers}")

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "n_answers": self.n_answers, "n_correct": self.n_correct,
                "sources": list(self.sources), "estimated_accuracy": self.estimated_accuracy,
                "chosen_by": self.chosen_by, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Any) -> CalibrationRecord:
        """The record of a checkpoint's `calibrator.fitted_on`; `CheckpointError` for unknown
        keys, `ConfigError` naming a bad value."""
        data = mapping(data, "calibrator.fitted_on")
        known_keys(data, tuple(f.name for f in fields(cls)), "calibrator.fitted_on")
        sources = data.get("sources", [])
        check_value(sources, InstanceOf(list, "a list of strings"), "calibrator.fitted_on.sources")
        return cls(data.get("method"), data.get("n_answers"), data.get("n_correct"), sources,
                   data.get("estimated_accuracy"), data.get("chosen_by"), data.get("reason"))


def parameter(row: Allowed) -> Any:
    """A calibrator parameter: a dataclass field checked by `row`, stored in the checkpoint."""
    return field(metadata={"row": row})


def parameter_names(kind: type[Calibrator]) -> tuple[str, ...]:
    """The parameters of a calibrator class, in declaration order (its fields but `fitted_on`)."""
    return tuple(f.name for f in fields(kind) if "row" in f.metadata)


C = TypeVar("C", bound="type[Calibrator]")


def register(kind: C) -> C:
    """Make a calibrator class a frozen dataclass, derive its constraints table from its
    `parameter` fields, and add it to `CALIBRATORS` under its `kind`."""
    kind = dataclass(frozen=True)(kind)
    kind.constraints = {**{f.name: f.metadata["row"] for f in fields(kind) if "row" in f.metadata},
                        "fitted_on": (None, InstanceOf(CalibrationRecord))}
    if kind.kind in CALIBRATORS:
        raise TypeError(f"two calibrators named {kind.kind!r}")
    CALIBRATORS[kind.kind] = kind
    return kind


class Calibrator(ABC):
    """Maps raw router scores in [0, 1] to probabilities in [0, 1], monotone (non-decreasing
    unless `decreasing` says otherwise: a Platt slope below 0 read from a checkpoint)."""

    kind: ClassVar[str]
    labelled: ClassVar[bool] = True
    """Whether fitting needs 0/1 labels (False: fitted on the scores alone)."""
    both_classes: ClassVar[bool] = True
    """Whether fitting needs right and wrong answers among the labels (a base rate does not)."""
    constraints: ClassVar[Constraints] = {}
    fitted_on: CalibrationRecord | None

    def __post_init__(self) -> None:
        for name in parameter_names(type(self)):  # a Fraction or Decimal is not silently rounded
            value = getattr(self, name)
            items = value if isinstance(value, (list, tuple)) else (value,)
            odd = next((v for v in items if isinstance(v, numbers.Number) and not is_real(v)
                        and not isinstance(v, bool)), None)
            if odd is not None:
                raise ConfigError(label(name), f"must be an int or a float, got a {type(odd).__name__}")
        check_fields(self, label=label)
        self.check()

    def check(self) -> None:  # noqa: B027 (a hook: most calibrators have no cross-field rule)
        """Checks across parameters (knots sorted, …) beyond each one's row; none by default."""

    @abstractmethod
    def apply(self, raw_scores: np.ndarray) -> np.ndarray:
        """Probabilities for raw scores of shape (n,); a non-finite score stays non-finite (the
        policy escalates it), so a calibrator never hides a damaged score."""

    @classmethod
    @abstractmethod
    def fit(cls, raw: np.ndarray, labels: np.ndarray | None, record: CalibrationRecord, *,
            training_prior: float | None) -> Calibrator:
        """This calibrator fitted on checked raw scores (and, when `labelled`, 0/1 labels)."""

    @property
    def decreasing(self) -> bool:
        """True when a higher raw score gives a lower p (only a damaged or hand-made checkpoint)."""
        return False

    def parameters(self) -> dict[str, Any]:
        """The fitted parameters, JSON-safe, as `calibrator_from_dict` reads them back."""
        values = {name: getattr(self, name) for name in parameter_names(type(self))}
        return {name: list(v) if isinstance(v, tuple) else v for name, v in values.items()}

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
        chosen = "" if record.chosen_by is None else f"; chosen by {record.chosen_by}: {record.reason}"
        return f"{self.kind} fitted {labels}{size}{where}{estimate}{chosen}"

    def describe_parameters(self) -> str:
        """The parameters in words for the model card: "slope = 1.2, intercept = -0.3"."""
        parts = [f"{name} = {_shown(value)}" for name, value in self.parameters().items()]
        return ", ".join(parts) if parts else "none"

    def warn_if_decreasing(self, where: str) -> None:
        """Say on load that this map inverts the ranking, rather than load it silently."""
        if self.decreasing:
            warnings.warn(f"{where}: the {self.kind} calibrator's map decreases "
                          f"({self.describe_parameters()}): a higher raw score gives a lower p, so "
                          "the router ranks answers backwards; refit it on more labelled answers",
                          DecreasingCalibratorWarning, stacklevel=3)


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return f"{len(value)} knots" if len(value) > 4 else "[" + ", ".join(f"{v:.6g}" for v in value) + "]"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


# --- numerics ---------------------------------------------------------------------------------------


def logit(raw_scores: np.ndarray) -> np.ndarray:
    raw = np.asarray(raw_scores, dtype=np.float64)
    clipped = np.clip(raw, SCORE_EPSILON, 1 - SCORE_EPSILON)
    return np.where(np.isfinite(raw), np.log(clipped) - np.log1p(-clipped), raw)


def sigmoid(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.where(z >= 0, 1 / (1 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1 + np.exp(-np.abs(z))))


def shift_prior(raw: np.ndarray, training_prior: float, target_prior: float) -> np.ndarray:
    right = raw * (target_prior / training_prior)
    wrong = (1 - raw) * ((1 - target_prior) / (1 - training_prior))
    with np.errstate(invalid="ignore", divide="ignore"):
        return right / (right + wrong)


# --- a checkpoint's sections ------------------------------------------------------------------------


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CheckpointError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def known_keys(data: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        raise CheckpointError(f"{where}: unknown keys {unknown}")
