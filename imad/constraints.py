"""One declarative constraints table per config, and the one checker that applies it.

Modelled on scikit-learn's `_parameter_constraints` / `validate_parameter_constraints` (without
importing scikit-learn). A config dataclass declares, right below its fields,

    constraints: ClassVar[Constraints] = {
        "n_agents": Integer(2, MAX_AGENTS),
        "eta": Real(0, 100),
        "aggregation": Options("soft", "hard"),
        "context_window": (None, Integer(1, MAX_CONTEXT_TOKENS)),   # None allowed
    }

and calls `check_fields(self)` in `__post_init__`. Rows are merged along the class's bases, so
a subclass lists only its new or changed fields. Every value that enters a config goes through
the same row, whatever its door:

- `check_fields` / `check_value`: a Python value (a constructor, a JSON or TOML file, a
  checkpoint's config). An int given for a float field becomes a float; nothing else changes.
- `parse_text`: the text of a `KEY=VALUE` setting (`imad.keyvalue`), converted by the field's
  declared type, never guessed: `api_key=123` stays the string "123", `n_agents=abc` is refused.

Both raise `ConfigError(field, "must be <what the row allows>, got <value>")`, the message
generated from the row (`check_value(..., advice=…)` adds what to do instead, where the row alone
cannot say it). Besides configs, the same rows check the values of a stored file (a checkpoint's
training record, a trigger budget's state) and of the environment (`OTEL_*`). The rules every
row shares:

- booleans are `true` / `false` (any case) as text, and `bool` values only (1 is not True);
- integers are ASCII digits with an optional sign and `_` separators (`١٢` and `1e3` are not);
  no float becomes an int, `3.0` included (as scikit-learn's `Interval(Integral, …)` refuses
  it), so a value is never rounded on the way in;
- reals refuse NaN and ±inf unless the row says `finite=False`;
- strings are `str` (`[1]` is not one), and refuse lone surrogates (`imad.text`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from imad.errors import ConfigError
from imad.jsonio import UntrustedJSONError, loads_untrusted
from imad.text import first_lone_surrogate

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*")
_REAL_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                        r"|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_MAX_NUMBER_TEXT = 400
"""Longest number text read (a 400-digit integer is still read, then refused by its bounds)."""
_MAX_JSON_DEPTH = 8
_SHOWN_CHARS = 80


class Refused(ValueError):
    """A value or text that a constraint does not allow (turned into `ConfigError` by the checker)."""


class Constraint(ABC):
    """One kind of value a field may take."""

    @abstractmethod
    def admit(self, value: Any) -> Any:
        """`value` as the field stores it, or `Refused`."""

    @abstractmethod
    def parse(self, text: str) -> Any:
        """The value a setting's text stands for (not yet admitted), or `Refused`."""

    @abstractmethod
    def __str__(self) -> str:
        """What the constraint allows, for error messages: "an integer in [2, 64]"."""


Allowed = Constraint | None | tuple[Constraint | None, ...]
Constraints = Mapping[str, Allowed]


def _number(x: float) -> str:
    """A bound as people write it: 86400, 0.5, 1e-06 (never 1e+06 for a million)."""
    if isinstance(x, int) or (x.is_integer() and abs(x) < 1e15):
        return str(int(x))
    return f"{x:g}"


def _bounds(low: float | None, high: float | None, closed: str) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f" {'>=' if closed in ('both', 'left') else '>'} {_number(low)}"
    if low is None:
        return f" {'<=' if closed in ('both', 'right') else '<'} {_number(high)}"
    left = "[" if closed in ("both", "left") else "("
    right = "]" if closed in ("both", "right") else ")"
    return f" in {left}{_number(low)}, {_number(high)}{right}"


@dataclass(frozen=True)
class Integer(Constraint):
    """An int in [low, high] (either bound optional); bools and floats are refused."""

    low: int | None = None
    high: int | None = None

    def admit(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise Refused
        number = int(value)
        if (self.low is not None and number < self.low) or (self.high is not None and number > self.high):
            raise Refused
        return number

    def parse(self, text: str) -> int:
        stripped = text.strip()
        if len(stripped) > _MAX_NUMBER_TEXT or not _INTEGER_TEXT.fullmatch(stripped):
            raise Refused
        return int(stripped)

    def __str__(self) -> str:
        return "an integer" + _bounds(self.low, self.high, "both")


@dataclass(frozen=True)
class Real(Constraint):
    """A float between `low` and `high`; `closed` says which ends belong ("both", "left",
    "right", "neither"). ±inf is refused unless `finite=False`, NaN unless `nan=True` (a metric
    undefined on its data). Ints become floats, unless `as_float=False` keeps them ints (a
    stored record written back as it was read)."""

    low: float | None = None
    high: float | None = None
    closed: Literal["both", "left", "right", "neither"] = "both"
    finite: bool = True
    nan: bool = False
    as_float: bool = True

    def admit(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise Refused
        try:
            number = float(value)
        except OverflowError:  # a 400-digit int
            raise Refused from None
        if math.isnan(number):
            if self.nan:
                return number
            raise Refused
        if self.finite and math.isinf(number):
            raise Refused
        low_open = self.closed in ("right", "neither")
        if self.low is not None and (number < self.low or (number == self.low and low_open)):
            raise Refused
        high_open = self.closed in ("left", "neither")
        if self.high is not None and (number > self.high or (number == self.high and high_open)):
            raise Refused
        if not self.as_float and isinstance(value, numbers.Integral):
            return int(value)
        return number

    def parse(self, text: str) -> float:
        stripped = text.strip()
        if len(stripped) > _MAX_NUMBER_TEXT or not _REAL_TEXT.fullmatch(stripped):
            raise Refused
        return float(stripped)

    def __str__(self) -> str:
        kind = "a finite number" if self.finite else "a number"
        return kind + _bounds(self.low, self.high, self.closed) + (" or NaN" if self.nan else "")


@dataclass(frozen=True)
class Boolean(Constraint):
    """`True` or `False`; as text `true` or `false` (any case), nothing else."""

    def admit(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise Refused
        return value

    def parse(self, text: str) -> bool:
        word = text.strip().lower()
        if word not in ("true", "false"):
            raise Refused
        return word == "true"

    def __str__(self) -> str:
        return "true or false"


@dataclass(frozen=True, init=False)
class Options(Constraint):
    """One of a fixed set of strings."""

    values: tuple[str, ...]

    def __init__(self, *values: str) -> None:
        object.__setattr__(self, "values", tuple(values))

    def admit(self, value: Any) -> str:
        if not isinstance(value, str) or value not in self.values:
            raise Refused
        return value

    def parse(self, text: str) -> str:
        return text.strip()

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Text(Constraint):
    """A str of valid Unicode with at most `max_chars` characters (non-blank unless `blank`).
    `path=True` also takes an `os.PathLike` (stored as str) and refuses NUL characters."""

    max_chars: int = 4_096
    blank: bool = False
    path: bool = False

    def admit(self, value: Any) -> str:
        if self.path and isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str) or len(value) > self.max_chars:
            raise Refused
        if (not self.blank and not value.strip()) or first_lone_surrogate(value) is not None:
            raise Refused
        if self.path and "\0" in value:
            raise Refused
        return value

    def parse(self, text: str) -> str:
        return text

    def __str__(self) -> str:
        kind = "a path" if self.path else "a string" if self.blank else "a non-empty string"
        return f"{kind} of at most {self.max_chars:,} characters"


@dataclass(frozen=True)
class URL(Constraint):
    """An http(s) URL with a host and a valid port (not 0), at most `max_chars` long, that an
    HTTP client can reach; `ascii_only` also refuses non-ASCII text (an IDN host, a lone
    surrogate) for readers that cannot encode it."""

    max_chars: int = 2_048
    ascii_only: bool = False

    def admit(self, value: Any) -> str:
        if not isinstance(value, str) or len(value) > self.max_chars:
            raise Refused
        if first_lone_surrogate(value) is not None or (self.ascii_only and not value.isascii()):
            raise Refused
        try:
            parts = urlsplit(value)
            usable = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        except (ValueError, UnicodeError):  # an out-of-range port, an unclosed [IPv6 bracket
            raise Refused from None
        if not usable:
            raise Refused
        return value

    def parse(self, text: str) -> str:
        return text

    def __str__(self) -> str:
        return "an http(s) URL with a host" + (" (ASCII)" if self.ascii_only else "")


@dataclass(frozen=True)
class Texts(Constraint):
    """A list or tuple of values each allowed by `item` (one str counts as a list of one), at
    most `max_items`, at least one unless `empty`; stored as a tuple. As text: comma-separated."""

    item: Constraint = Text()
    max_items: int = 1_000
    empty: bool = False

    def admit(self, value: Any) -> tuple[Any, ...]:
        if isinstance(value, (str, os.PathLike)):
            value = (value,)
        if not isinstance(value, (list, tuple)) or len(value) > self.max_items:
            raise Refused
        if not value and not self.empty:
            raise Refused
        return tuple(self.item.admit(item) for item in value)

    def parse(self, text: str) -> tuple[Any, ...]:
        return tuple(self.item.parse(part) for part in text.split(",") if part.strip())

    def __str__(self) -> str:
        least = "0" if self.empty else "1"
        return f"a list of {least} to {self.max_items:,} items, each {self.item}"


@dataclass(frozen=True)
class StringMap(Constraint):
    """A mapping of str to str (e.g. extra HTTP headers), as text a JSON object."""

    max_items: int = 64

    def admit(self, value: Any) -> dict[str, str]:
        if not isinstance(value, Mapping) or len(value) > self.max_items:
            raise Refused
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise Refused
        return dict(value)

    def parse(self, text: str) -> Any:
        try:  # the one reader for untrusted JSON: depth, digits, NaN and surrogates refused
            return loads_untrusted(text, max_depth=_MAX_JSON_DEPTH)
        except UntrustedJSONError:
            raise Refused from None

    def __str__(self) -> str:
        return f"a JSON object of strings (at most {self.max_items} keys)"


@dataclass(frozen=True)
class InstanceOf(Constraint):
    """An instance of `kind` (a type or a tuple of types: an object such as a chat model, or a
    JSON list or object), never a class; it has no text form. `what` names it in messages
    ("a JSON object"); by default the type's name."""

    kind: type | tuple[type, ...]
    what: str = ""

    def admit(self, value: Any) -> Any:
        if isinstance(value, type) or not isinstance(value, self.kind):
            raise Refused
        return value

    def parse(self, text: str) -> Any:
        raise Refused

    def __str__(self) -> str:
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        return self.what or f"a {' or '.join(k.__name__ for k in kinds)} (not settable as text)"


@dataclass(frozen=True, init=False)
class Items(Constraint):
    """A list (or tuple) of exactly one value per row, each allowed by its row: `Items((None,
    Real(0, 1)), Boolean())` is `[score or null, flag]`. Stored as a tuple; no text form."""

    rows: tuple[Allowed, ...]

    def __init__(self, *rows: Allowed) -> None:
        object.__setattr__(self, "rows", tuple(rows))

    def admit(self, value: Any) -> tuple[Any, ...]:
        if not isinstance(value, (list, tuple)) or len(value) != len(self.rows):
            raise Refused
        return tuple(_admit(item, row) for item, row in zip(value, self.rows, strict=True))

    def parse(self, text: str) -> Any:
        raise Refused

    def __str__(self) -> str:
        return "a list [" + ", ".join(describe(row) for row in self.rows) + "]"


# --- the checker -----------------------------------------------------------------------------


def _alternatives(allowed: Allowed) -> tuple[Constraint | None, ...]:
    return allowed if isinstance(allowed, tuple) else (allowed,)


def describe(allowed: Allowed) -> str:
    """What a row allows, in words: "none or an integer in [1, 64]"."""
    return " or ".join("none" if c is None else str(c) for c in _alternatives(allowed))


def show(value: Any) -> str:
    """A value for an error message: its repr, cut short (a 400-digit int stays readable)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        try:
            return f"an integer of {len(str(abs(value)))} digits"
        except ValueError:  # beyond Python's 4,300-digit str limit
            return f"an integer of {value.bit_length():,} bits"
    try:
        text = repr(value)
    except ValueError:  # an int beyond Python's 4,300-digit str limit, alone or inside a list
        if isinstance(value, int):
            return f"an integer of {value.bit_length():,} bits"
        return f"a {type(value).__name__} holding an integer beyond 4,300 digits"
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…"


def _admit(value: Any, allowed: Allowed) -> Any:
    """`value` as the first alternative of the row that takes it stores it, or `Refused`."""
    for constraint in _alternatives(allowed):
        if constraint is None:
            if value is None:
                return None
            continue
        try:
            return constraint.admit(value)
        except Refused:
            continue
    raise Refused


def check_value(value: Any, allowed: Allowed, where: str, *, advice: str = "") -> Any:
    """`value` as stored, or ConfigError(where, "must be …, got …[; advice]"); `advice` says
    what to do instead, where the row alone cannot ("a non-finite p escalates as unparsed")."""
    try:
        return _admit(value, allowed)
    except Refused:
        raise ConfigError(where, f"must be {describe(allowed)}, got {show(value)}"
                          + (f"; {advice}" if advice else "")) from None


def parse_text(text: str, allowed: Allowed, where: str) -> Any:
    """The value the text of a setting stands for, checked, or ConfigError naming `where`.

    `none` / `null` mean None where the row allows None; otherwise the alternatives are tried
    in order, each reading the text by its own type."""
    alternatives = _alternatives(allowed)
    if None in alternatives and text.strip().lower() in ("none", "null"):
        return None
    for constraint in alternatives:
        if constraint is None:
            continue
        try:
            return constraint.admit(constraint.parse(text))
        except Refused:
            continue
    raise ConfigError(where, f"must be {describe(allowed)}, got {show(text)}")


def ascii_int(text: str) -> int:
    """An argparse `type=` for integer flags: ASCII digits only (`int()` alone reads '١٢' as 12)."""
    try:
        return Integer().admit(Integer().parse(text))
    except Refused:
        raise ValueError(text) from None  # argparse turns it into "invalid ascii_int value"


def table_of(config_class: type) -> dict[str, Allowed]:
    """The merged `constraints` rows of a class and its bases (a subclass's row wins)."""
    table: dict[str, Allowed] = {}
    for klass in reversed(config_class.__mro__):
        table.update(vars(klass).get("constraints", {}))
    return table


def settable_fields(config_class: type) -> tuple[str, ...]:
    """The dataclass fields a caller may pass (init=True), in declaration order."""
    return tuple(f.name for f in dataclasses.fields(config_class) if f.init)


def default_label(config_class: type) -> Callable[[str], str]:
    return lambda name: f"{config_class.__name__}.{name}"


def check_fields(instance: Any, label: Callable[[str], str] | None = None) -> None:
    """Apply the class's table to every settable field of a dataclass instance (frozen or not),
    storing each admitted value (an int in a float field becomes a float).

    `label(field)` names a field in errors (default `ClassName.field`). A field with no row is a
    bug in imad, not bad input: TypeError, so a new field cannot go unchecked."""
    config_class = type(instance)
    table = table_of(config_class)
    name_of = label or default_label(config_class)
    for name in settable_fields(config_class):
        if name not in table:
            raise TypeError(f"{config_class.__name__}.{name} has no row in its constraints table")
        value = getattr(instance, name)
        admitted = check_value(value, table[name], name_of(name))
        if admitted is not value:
            object.__setattr__(instance, name, admitted)


def parse_settings(config_class: type, texts: Mapping[str, str],
                   label: Callable[[str], str]) -> dict[str, Any]:
    """KEY → text settings as typed, checked field values of `config_class`.

    An unknown key is a ConfigError listing the known fields; `label(key)` names a key in errors
    (e.g. `--set n_agents`)."""
    table = table_of(config_class)
    known = settable_fields(config_class)
    values: dict[str, Any] = {}
    for key, text in texts.items():
        if key not in known:
            raise ConfigError(label(key), f"unknown setting of {config_class.__name__}; known: "
                              + ", ".join(known))
        values[key] = parse_text(text, table[key], label(key))
    return values


# --- bounds shared by several tables (README "Limits") ------------------------------------------

MAX_SEED = 2**31 - 1
"""Seeds fit llama.cpp's uint32 even after a debate adds 1000·round + agent to them."""
MAX_TIMEOUT_S = 86_400.0
"""One day: longer than any real call, and far below where `socket.settimeout` overflows."""
MAX_THREADS = max(2, os.cpu_count() or 1)
"""This machine's CPU count (at least 2, the embedded model's default): more threads only
oversubscribe the cores, and ~1,000 make libgomp's thread creation fail (a native crash)."""
MAX_COMPLETION_TOKENS = 32_768
"""Completion tokens of one call; no reply imad asks for comes near it."""
