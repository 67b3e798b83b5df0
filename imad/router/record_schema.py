"""Typed JSON sections that keep their key order: the machinery of `imad.router.training_record`.

A section is a frozen dataclass whose `FIELDS` table maps each JSON key to the attribute that
holds it and the `Field` that checks it. Values are checked on creation (strict types: `true` is
not a number; no NaN or ±inf unless a field allows NaN; integers and magnitudes bounded), and a
`ConfigError` names the field's JSON path (`data.split.seed`).

Why the order is kept: config.json files written by older imads hold the same sections in
different orders (the v1 and v2 checkpoints differ), and a load → save round trip must write the
same bytes. `keys` remembers which keys a section held, in their order; `to_dict` writes exactly
those. Keys no `Field` knows go to `extra` verbatim (read-only), so sections written by a newer
imad survive a round trip through an older one; they are free-form by definition.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Protocol

from imad.errors import ConfigError

MAX_COUNT = 10**12
"""Bound on counts and integers: a corpus of 10^12 answers is not one (a 400-digit int is damage)."""
MAX_MAGNITUDE = 1e12
"""Bound on |number| for the record's measurements (token costs, learning rates, metrics)."""


class Field(Protocol):
    """Checks one JSON value (`read`, raising `ConfigError(key, …)`) and writes it back."""

    def read(self, value: Any, key: str) -> Any: ...

    def write(self, value: Any) -> Any: ...


class _Plain:
    """A field whose Python value is its JSON value."""

    def write(self, value: Any) -> Any:
        return value


@dataclass(frozen=True)
class Integer(_Plain):
    """An integer in [minimum, maximum] (a count by default)."""

    minimum: int = 0
    maximum: int = MAX_COUNT

    def read(self, value: Any, key: str) -> int:
        value = _python_scalar(value)
        if not isinstance(value, int) or isinstance(value, bool) \
                or not self.minimum <= value <= self.maximum:
            top = "10^12" if self.maximum == MAX_COUNT else f"{self.maximum:,}"
            raise ConfigError(key, f"must be an integer from {self.minimum} to {top}, got "
                              f"{show(value)}")
        return value


@dataclass(frozen=True)
class Number(_Plain):
    """A finite number in [low, high] (open ends where `open_low` / `open_high`), or NaN where
    `allow_nan` (a metric undefined on its data, e.g. AUROC with one class). An int stays an int,
    so the number is written back as it was read."""

    low: float = -MAX_MAGNITUDE
    high: float = MAX_MAGNITUDE
    open_low: bool = False
    open_high: bool = False
    allow_nan: bool = False

    def read(self, value: Any, key: str) -> float:
        value = _python_scalar(value)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ConfigError(key, f"must be a number, got {show(value)}")
        if isinstance(value, float) and math.isnan(value):
            if self.allow_nan:
                return value
            raise ConfigError(key, "must be a number, got NaN")
        low_ok = value > self.low if self.open_low else value >= self.low
        high_ok = value < self.high if self.open_high else value <= self.high
        if not (low_ok and high_ok):  # ±inf and 400-digit ints fail here, compared exactly
            brackets = ("(" if self.open_low else "[", ")" if self.open_high else "]")
            raise ConfigError(key, f"must be a finite number in {brackets[0]}{self.low:g}, "
                              f"{self.high:g}{brackets[1]}, got {show(value)}")
        return value


@dataclass(frozen=True)
class Text(_Plain):
    def read(self, value: Any, key: str) -> str:
        if not isinstance(value, str):
            raise ConfigError(key, f"must be a string, got {show(value)}")
        return value


@dataclass(frozen=True)
class Flag(_Plain):
    def read(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise ConfigError(key, f"must be true or false, got {show(value)}")
        return value


@dataclass(frozen=True)
class Nullable:
    """`inner`, or JSON null (None)."""

    inner: Field

    def read(self, value: Any, key: str) -> Any:
        return None if value is None else self.inner.read(value, key)

    def write(self, value: Any) -> Any:
        return None if value is None else self.inner.write(value)


@dataclass(frozen=True)
class ListOf:
    """A JSON list of `inner` values, held as a tuple."""

    inner: Field

    def read(self, value: Any, key: str) -> tuple[Any, ...]:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(key, f"must be a list, got {show(value)}")
        return tuple(self.inner.read(item, f"{key}[{index}]") for index, item in enumerate(value))

    def write(self, value: tuple[Any, ...]) -> list[Any]:
        return [self.inner.write(item) for item in value]


@dataclass(frozen=True)
class MapOf:
    """A JSON object of name → `inner` value, held read-only in its order."""

    inner: Field

    def read(self, value: Any, key: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise ConfigError(key, f"must be a JSON object, got {show(value)}")
        return MappingProxyType({name: self.inner.read(item, f"{key}.{name}")
                                 for name, item in value.items()})

    def write(self, value: Mapping[str, Any]) -> dict[str, Any]:
        return {name: self.inner.write(item) for name, item in value.items()}


@dataclass(frozen=True)
class Nested:
    """A sub-section: a JSON object read by a `Section` class."""

    section: type[Section]

    def read(self, value: Any, key: str) -> Section:
        if isinstance(value, self.section):
            return value
        try:
            return self.section.from_dict(value)
        except ConfigError as error:  # name the path from the top: key.sub_key
            raise ConfigError(f"{key}.{error.field}" if error.field else key,
                              str(error)[len(error.field) + 2:]) from None

    def write(self, value: Section) -> dict[str, Any]:
        return value.to_dict()


@dataclass(frozen=True)
class Free:
    """Any JSON value, held read-only: for parts whose shape nobody fixes."""

    def read(self, value: Any, key: str) -> Any:
        return freeze(value, key)

    def write(self, value: Any) -> Any:
        return thaw(value)


@dataclass(frozen=True, kw_only=True)
class Section:
    """A typed JSON object; subclasses declare `FIELDS` and one attribute per field."""

    FIELDS: ClassVar[Mapping[str, tuple[str, Field]]] = {}
    keys: tuple[str, ...] = ()
    """The JSON keys this section holds, in the order it writes them (`()`: the set fields)."""
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Keys no field knows, kept verbatim (free-form)."""

    def __post_init__(self) -> None:
        extra = freeze(dict(self.extra), "extra")
        if not self.keys:
            known = tuple(k for k, (attr, _) in self.FIELDS.items() if getattr(self, attr) is not None)
            object.__setattr__(self, "keys", known + tuple(k for k in extra if k not in known))
        for key in self.keys:
            if key in self.FIELDS:
                attr, reader = self.FIELDS[key]
                object.__setattr__(self, attr, reader.read(getattr(self, attr), key))
            elif key not in extra:
                raise ConfigError(key, "listed in keys but holds no value")
        object.__setattr__(self, "extra", extra)

    @classmethod
    def from_dict(cls, data: Any) -> Section:
        """Read a parsed JSON object; `ConfigError` names the first bad field."""
        if not isinstance(data, Mapping):
            raise ConfigError("", f"must be a JSON object, got {show(data)}")
        values = {cls.FIELDS[k][0]: v for k, v in data.items() if k in cls.FIELDS}
        extra = {k: v for k, v in data.items() if k not in cls.FIELDS}
        return cls(keys=tuple(data), extra=extra, **values)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in `keys` order (as read)."""
        out: dict[str, Any] = {}
        for key in self.keys:
            if key in self.FIELDS:
                attr, writer = self.FIELDS[key]
                out[key] = writer.write(getattr(self, attr))
            else:
                out[key] = thaw(self.extra[key])
        return out


def _python_scalar(value: Any) -> Any:
    """A numpy scalar (a metric computed in code) as the Python number it holds."""
    return value.item() if hasattr(value, "item") and hasattr(value, "dtype") else value


def show(value: Any) -> str:
    """A short repr for an error message (a 400-digit int is shown by its size)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def freeze(value: Any, name: str) -> Any:
    """A read-only deep copy: dicts become mapping proxies, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): freeze(v, name) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v, name) for v in value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "item") and hasattr(value, "dtype"):  # a numpy scalar from a metric
        return value.item()
    raise ConfigError(name, f"holds a {type(value).__name__}, which config.json cannot store")


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a frozen value (dicts and lists, JSON-ready)."""
    if isinstance(value, Section):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return copy.copy(value)
