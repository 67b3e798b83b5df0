"""A row of a constraints table: one kind, or alternatives (`(None, Integer(1, 64))`), and how
a value passes it; `Items` is the kind built from rows (a fixed-length list, one row per item).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from imad.constraints.kinds import Allowed, Constraint, Refused

_SHOWN_CHARS = 80


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
        return tuple(admit_row(item, row) for item, row in zip(value, self.rows, strict=True))

    def parse(self, text: str) -> Any:
        raise Refused

    def __str__(self) -> str:
        return "a list [" + ", ".join(describe(row) for row in self.rows) + "]"


def alternatives(allowed: Allowed) -> tuple[Constraint | None, ...]:
    return allowed if isinstance(allowed, tuple) else (allowed,)


def describe(allowed: Allowed) -> str:
    """What a row allows, in words: "none or an integer in [1, 64]"."""
    return " or ".join("none" if c is None else str(c) for c in alternatives(allowed))


def show(value: Any) -> str:
    """A value for an error message: its repr, cut short (a 400-digit int stays readable)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        try:
            return f"an integer of {len(str(abs(value)))} digits"
        except ValueError:  # beyond Python's 4,300-digit str limit
            return f"an integer of {value.bit_length():,} bits"
    if isinstance(value, float) and value != 0 and abs(value) < sys.float_info.min:
        return f"{value!r} (a subnormal number)"
    try:
        text = repr(value)
    except ValueError:  # an int beyond Python's 4,300-digit str limit, alone or inside a list
        if isinstance(value, int):
            return f"an integer of {value.bit_length():,} bits"
        return f"a {type(value).__name__} holding an integer beyond 4,300 digits"
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…"


def admit_row(value: Any, allowed: Allowed) -> Any:
    """`value` as the first alternative of the row that takes it stores it, or `Refused`."""
    for constraint in alternatives(allowed):
        if constraint is None:
            if value is None:
                return None
            continue
        try:
            return constraint.admit(value)
        except Refused:
            continue
    raise Refused
