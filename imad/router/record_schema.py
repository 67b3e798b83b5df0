"""Typed JSON sections that keep their key order: the machinery of `imad.router.training_record`.

A section is a frozen dataclass made by `@section`, each field declared once with `stored(checker)`
(its JSON key is its name unless `json_key` says otherwise); `FIELDS`, the table that maps each
JSON key to the attribute that holds it and what checks it, is derived from those fields. A
checker is a constraints row (`imad.constraints`: `Integer(0, MAX_COUNT)`,
`Real(0, 1, as_float=False)`, `(None, TEXT)`, …) for a value, or a `Structure` (`ListOf`,
`MapOf`, `Nested`, `Free`) for a list, object or sub-section. Values are checked on creation
(strict types: `true` is not a number; no NaN or ±inf unless a row allows NaN; integers and
magnitudes bounded), and a `ConfigError` names the field's JSON path (`data.split.seed`).

Why the order is kept: config.json files written by older imads hold the same sections in
different orders (the v1 and v2 checkpoints differ), and a load → save round trip must write the
same bytes. `keys` remembers which keys a section held, in their order; `to_dict` writes exactly
those. Keys no field knows go to `extra` verbatim (read-only), so sections written by a newer
imad survive a round trip through an older one; they are free-form by definition.
"""

from __future__ import annotations

import copy
import copyreg
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from imad.constraints import Allowed, InstanceOf, Text, check_value
from imad.errors import ConfigError

MAX_COUNT = 10**12
"""Bound on counts and integers: a corpus of 10^12 answers is not one (a 400-digit int is damage)."""
MAX_MAGNITUDE = 1e12
"""Bound on |number| for the record's measurements (token costs, learning rates, metrics)."""
TEXT = Text(max_chars=1_000_000, blank=True)
"""A stored string: any valid Unicode (no lone surrogates); config.json's bounded read caps it."""
JSON_OBJECT = InstanceOf(Mapping, "a JSON object")
JSON_LIST = InstanceOf((list, tuple), "a list")


class Structure(ABC):
    """A JSON list, object or sub-section: checks its parts (`read`, raising `ConfigError(key,
    …)`) and writes them back."""

    @abstractmethod
    def read(self, value: Any, key: str) -> Any: ...

    @abstractmethod
    def write(self, value: Any) -> Any: ...


Field = Structure | Allowed
"""What checks one JSON key: a constraints row or a `Structure`."""


def read(checker: Field, value: Any, key: str) -> Any:
    """`value` checked by a structure, or by a constraints row (a numpy scalar read as the
    Python number it holds, a metric computed in code)."""
    if isinstance(checker, Structure):
        return checker.read(value, key)
    return check_value(_python_scalar(value), checker, key)


def write(checker: Field, value: Any) -> Any:
    """The JSON value of a checked one (a row's value is its own)."""
    return checker.write(value) if isinstance(checker, Structure) else value


@dataclass(frozen=True)
class Nullable(Structure):
    """`inner`, or JSON null (None); a row says it with `(None, row)`."""

    inner: Structure

    def read(self, value: Any, key: str) -> Any:
        return None if value is None else self.inner.read(value, key)

    def write(self, value: Any) -> Any:
        return None if value is None else self.inner.write(value)


@dataclass(frozen=True)
class ListOf(Structure):
    """A JSON list of `inner` values, held as a tuple."""

    inner: Field

    def read(self, value: Any, key: str) -> tuple[Any, ...]:
        check_value(value, JSON_LIST, key)
        return tuple(read(self.inner, item, f"{key}[{index}]") for index, item in enumerate(value))

    def write(self, value: tuple[Any, ...]) -> list[Any]:
        return [write(self.inner, item) for item in value]


@dataclass(frozen=True)
class MapOf(Structure):
    """A JSON object of name → `inner` value, held read-only in its order."""

    inner: Field

    def read(self, value: Any, key: str) -> Mapping[str, Any]:
        check_value(value, JSON_OBJECT, key)
        return MappingProxyType({name: read(self.inner, item, f"{key}.{name}")
                                 for name, item in value.items()})

    def write(self, value: Mapping[str, Any]) -> dict[str, Any]:
        return {name: write(self.inner, item) for name, item in value.items()}


@dataclass(frozen=True)
class Nested(Structure):
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
class Free(Structure):
    """Any JSON value, held read-only: for parts whose shape nobody fixes."""

    def read(self, value: Any, key: str) -> Any:
        return freeze(value, key)

    def write(self, value: Any) -> Any:
        return thaw(value)


def stored(checker: Field, *, json_key: str | None = None) -> Any:
    """A section's field: JSON key `json_key` (default: the field's name), checked by `checker`,
    None when absent."""
    return field(default=None, metadata={"checker": checker, "json_key": json_key})


S = TypeVar("S", bound="type[Section]")


def section(cls: S) -> S:
    """Make `cls` a frozen, keyword-only dataclass and derive its `FIELDS` table from the fields
    declared with `stored` (base classes' first, in declaration order)."""
    cls = dataclass(frozen=True, kw_only=True)(cls)
    cls.FIELDS = MappingProxyType({f.metadata["json_key"] or f.name: (f.name, f.metadata["checker"])
                                   for f in fields(cls) if "checker" in f.metadata})
    return cls


@dataclass(frozen=True, kw_only=True)
class Section:
    """A typed JSON object; subclasses are made with `@section` and declare one `stored` field
    per JSON key."""

    FIELDS: ClassVar[Mapping[str, tuple[str, Field]]] = {}
    """JSON key → (attribute, its row or structure), in the order a new section writes them."""
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
                attr, checker = self.FIELDS[key]
                object.__setattr__(self, attr, read(checker, getattr(self, attr), key))
            elif key not in extra:
                raise ConfigError(key, "listed in keys but holds no value")
        object.__setattr__(self, "extra", extra)

    @classmethod
    def from_dict(cls, data: Any) -> Section:
        """Read a parsed JSON object; `ConfigError` names the first bad field."""
        check_value(data, JSON_OBJECT, "")
        values = {cls.FIELDS[k][0]: v for k, v in data.items() if k in cls.FIELDS}
        extra = {k: v for k, v in data.items() if k not in cls.FIELDS}
        return cls(keys=tuple(data), extra=extra, **values)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in `keys` order (as read)."""
        out: dict[str, Any] = {}
        for key in self.keys:
            if key in self.FIELDS:
                attr, checker = self.FIELDS[key]
                out[key] = write(checker, getattr(self, attr))
            else:
                out[key] = thaw(self.extra[key])
        return out


def _python_scalar(value: Any) -> Any:
    """A numpy scalar (a metric computed in code) as the Python number it holds."""
    return value.item() if hasattr(value, "item") and hasattr(value, "dtype") else value


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


def _read_only_mapping(items: dict[str, Any]) -> MappingProxyType:
    return MappingProxyType(items)


# A frozen section pickles as its plain dict and unpickles read-only again, so a router can be
# sent to another process (the server's scoring process, a multiprocessing pool).
copyreg.pickle(MappingProxyType, lambda proxy: (_read_only_mapping, (dict(proxy),)))


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a frozen value (dicts and lists, JSON-ready)."""
    if isinstance(value, Section):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return copy.copy(value)
