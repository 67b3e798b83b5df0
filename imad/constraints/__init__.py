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

import os

from imad.constraints.checker import (
    ascii_int,
    check_fields,
    check_value,
    default_label,
    parse_settings,
    parse_text,
    settable_fields,
    table_of,
)
from imad.constraints.kinds import (
    URL,
    Allowed,
    Boolean,
    Constraint,
    Constraints,
    InstanceOf,
    Integer,
    Options,
    Real,
    Refused,
    StringMap,
    Text,
    Texts,
)
from imad.constraints.rows import Items, describe, show

# --- bounds shared by several tables (docs/reference/cli.md and settings.md) -----------------------

MAX_SEED = 2**31 - 1
"""Seeds fit llama.cpp's uint32 even after a debate adds 1000·round + agent to them."""
MAX_TIMEOUT_S = 86_400.0
"""One day: longer than any real call, and far below where `socket.settimeout` overflows."""
MAX_THREADS = max(2, os.cpu_count() or 1)
"""This machine's CPU count (at least 2, the embedded model's default): more threads only
oversubscribe the cores, and ~1,000 make libgomp's thread creation fail (a native crash)."""
MAX_COMPLETION_TOKENS = 32_768
"""Completion tokens of one call; no reply imad asks for comes near it."""

__all__ = [
    "MAX_COMPLETION_TOKENS", "MAX_SEED", "MAX_THREADS", "MAX_TIMEOUT_S", "URL", "Allowed", "Boolean",
    "Constraint", "Constraints", "InstanceOf", "Integer", "Items", "Options", "Real", "Refused",
    "StringMap", "Text", "Texts", "ascii_int", "check_fields", "check_value", "default_label",
    "describe", "parse_settings", "parse_text", "settable_fields", "show", "table_of",
]
