"""The scores and labels a calibrator is given, checked: a sequence of real numbers (no
Fraction, Decimal, complex, bool, text or object array, no 2-D input, no integer too large for a
float), and for fitting, scores in [0, 1] and 0/1 labels of both classes. What numpy would coerce
or crash on is a `ConfigError` naming what it got.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from imad.constraints import show
from imad.errors import ConfigError

MIN_LABELLED_ANSWERS = 10
"""Fewest labelled answers a labelled method is fitted on; fewer give a calibrator that is noise."""
_REAL_KINDS = "fiu"
"""numpy dtype kinds a score array may have: float, signed and unsigned int (not bool, complex,
object or text)."""


def is_real(value: Any) -> bool:
    return (isinstance(value, (numbers.Integral, float, np.floating))
            and not isinstance(value, (bool, np.bool_)))


def real_array(values: Any, where: str) -> np.ndarray:
    """`values` as a 1-D float64 array, refusing what is not a sequence of real numbers with a
    `ConfigError` (object, bool, complex or text arrays, Fractions, 2-D input, a 400-digit int);
    non-finite numbers pass (each caller decides what they mean)."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in _REAL_KINDS:
            raise ConfigError(where, f"expected an array of real numbers, got dtype {values.dtype}")
        if values.ndim != 1:
            raise ConfigError(where, f"expected a 1-D sequence, got shape {values.shape}")
        return values.astype(np.float64, copy=False)
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__len__"):
        raise ConfigError(where, f"expected a sequence of numbers, got {type(values).__name__}")
    items = list(values)
    bad = next((i for i, v in enumerate(items) if not is_real(v)), None)
    if bad is not None and isinstance(items[bad], (list, tuple, np.ndarray)):
        raise ConfigError(where, f"expected a 1-D sequence of numbers, got a list at index {bad}")
    if bad is not None:
        raise ConfigError(where, f"expected real numbers (int or float), got a "
                          f"{type(items[bad]).__name__} at index {bad}")
    try:
        return np.array(items, dtype=np.float64)
    except OverflowError:  # a 400-digit int
        raise ConfigError(where, "expected numbers that fit a float, got an integer too large") from None


def check_scores(scores: Any) -> np.ndarray:
    """Raw scores to fit on: a non-empty 1-D sequence of finite numbers in [0, 1]."""
    raw = real_array(scores, "scores")
    if len(raw) == 0:
        raise ConfigError("scores", f"expected a non-empty 1-D sequence, got shape {raw.shape}")
    bad = np.nonzero(~np.isfinite(raw) | (raw < 0) | (raw > 1))[0]
    if len(bad):
        raise ConfigError("scores", f"{len(bad)} scores are not finite numbers in [0, 1] "
                          f"(first at index {int(bad[0])}: {raw[bad[0]]})")
    return raw


def check_labels(labels: Any, n: int, method: str, *, both_classes: bool = True) -> np.ndarray:
    """0/1 labels for `n` scores (1: the answer was right), both classes present unless
    `both_classes` is False (a base rate, or `auto`, which then falls back to one)."""
    if labels is None:
        raise ConfigError("labels", f"{method} needs 0/1 labels (1: the answer was right); "
                          "prior_shift needs none")
    if isinstance(labels, np.ndarray) and labels.ndim != 1:
        raise ConfigError("labels", f"expected a 1-D sequence, got shape {labels.shape}")
    if isinstance(labels, (str, bytes, Mapping)) or not hasattr(labels, "__len__"):
        raise ConfigError("labels", f"expected a sequence of 0/1, got {type(labels).__name__}")
    values = labels.tolist() if isinstance(labels, np.ndarray) else list(labels)
    if len(values) != n:
        raise ConfigError("labels", f"{len(values)} labels for {n} scores")
    bad = [v for v in values if not (type(v) in (bool, int, float) and v in (0, 1))]
    if bad:
        first = bad[0]
        raise ConfigError("labels", f"expected 0 or 1 (or true/false), got {show(first)}")
    y = np.array(values, dtype=np.float64)
    if n < MIN_LABELLED_ANSWERS:
        raise ConfigError("labels", f"{method} needs at least {MIN_LABELLED_ANSWERS} labelled answers, "
                          f"got {n}")
    if both_classes and y.min() == y.max():
        which = "right" if y[0] == 1 else "wrong"
        raise ConfigError("labels", f"all {n} answers are {which}: {method} needs both right and "
                          "wrong answers (label more, or use auto or base_rate)")
    return y
