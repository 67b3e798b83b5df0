"""The kinds of value a constraints row allows (`imad.constraints`): integers, reals, booleans,
options, texts, URLs, lists, string maps and instances. Each kind admits a Python value, parses
a setting's text, and says in words what it allows; the checker (`imad.constraints.checker`)
turns a refusal into a `ConfigError` naming the field.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from imad.jsonio import UntrustedJSONError, loads_untrusted
from imad.text import first_lone_surrogate

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*")
_REAL_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                        r"|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_MAX_NUMBER_TEXT = 400
"""Longest number text read (a 400-digit integer is still read, then refused by its bounds)."""
_MAX_JSON_DEPTH = 8


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


def _number_text(text: str, pattern: re.Pattern[str]) -> str:
    """`text` stripped, when `pattern` reads it whole as a number of at most `_MAX_NUMBER_TEXT`
    characters; else `Refused` (the one rule for a setting's number text, integer or real)."""
    stripped = text.strip()
    if len(stripped) > _MAX_NUMBER_TEXT or not pattern.fullmatch(stripped):
        raise Refused
    return stripped


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
        return int(_number_text(text, _INTEGER_TEXT))

    def __str__(self) -> str:
        return "an integer" + _bounds(self.low, self.high, "both")


@dataclass(frozen=True)
class Real(Constraint):
    """A float between `low` and `high`; `closed` says which ends belong ("both", "left",
    "right", "neither"). ±inf is refused unless `finite=False`, NaN unless `nan=True` (a metric
    undefined on its data), and always a subnormal number (0 < |x| < 2.2e-308: τ = 1e-320 in a
    checkpoint is damage, not a threshold) or a nonzero text too small for a float (1e-400, which
    would read as 0). Ints become floats, unless `as_float=False` keeps them ints (a
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
        if number != 0 and abs(number) < sys.float_info.min:  # subnormal: damage, not a setting
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
        stripped = _number_text(text, _REAL_TEXT)
        number = float(stripped)
        if number == 0 and any(digit in "123456789" for digit in stripped.lower().partition("e")[0]):
            raise Refused  # 1e-400 underflows to 0: a nonzero setting never reads as 0
        return number

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
