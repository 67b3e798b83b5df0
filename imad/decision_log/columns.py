"""The columns of the decision log: one row per decision.

The log's table is derived from a list of `LogColumn`s, never written out by hand: the store
builds its `CREATE TABLE`, its insert and its readers from the list, and the export and the
report read the same names. The list is the one decision schema's `log` view
(`imad.decide.schema`): each field there is a column here, with its type and meaning.

A codec says how a Python value travels into SQLite and back: `plain` as is, `bool` as 0/1,
`json` as JSON text (dicts and lists: reasons, features, tokens by phase).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from imad.decide.schema import FIELD, Field, fields_of
from imad.jsonio import loads_untrusted
from imad.text import first_lone_surrogate

ID = FIELD["id"].key("log")
"""The column holding the completion id: unique, what labels and feedback name."""
TIME = FIELD["time"].key("log")
"""When the decision was made, unix seconds (UTC): windows, --since and pruning read it."""
LATEST_TIME = 32_503_680_000.0
"""3000-01-01 in unix seconds: a row's time is in [1970, 3000), as `--since` is."""


def is_log_time(value: Any) -> bool:
    """Whether `value` can be a row's time: unix seconds in [1970, 3000), finite, not a bool
    (every reader windows and sorts by it; the writer refuses a row without one)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and 0 <= value < LATEST_TIME)


def iso_time(unix_seconds: float) -> str:
    """A row's time as people read it: ISO 8601 in UTC, to the second (`2026-12-07T19:30:24Z`)."""
    return datetime.fromtimestamp(unix_seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


MODEL = FIELD["served_model"].key("log")
"""The served model name (the report's by-model rows, --model)."""
ESCALATED = FIELD["escalate"].key("log")
"""True when the debate's answer was served."""
RAW = FIELD["raw"].key("log")
"""The network's score before the calibrator (what a recalibration fits on)."""
SERVED = FIELD["source"].key("log")
"""Which answer was served; "debate" for the debate's (a label then is about the debate)."""
NOTHING_SERVED = "none"
"""`SERVED` of a request whose pipeline gave no usable answer (the server answered 502/504)."""


def served_an_answer(row: dict[str, Any]) -> bool:
    """Whether `row`'s request got an answer; one that failed has nothing to label or measure,
    so the readers that compute metrics leave it out."""
    return row.get(SERVED) != NOTHING_SERVED


CODECS = ("plain", "bool", "json")
SQLITE_TYPES = ("TEXT", "REAL", "INTEGER")


@dataclass(frozen=True)
class LogColumn:
    """One column of the decision table: its name, SQLite type, one-line meaning and codec."""

    name: str
    sqlite_type: str
    meaning: str
    codec: str = "plain"

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.name.islower():
            raise ValueError(f"log column name {self.name!r} must be a lower-case identifier")
        if self.sqlite_type not in SQLITE_TYPES:
            raise ValueError(f"log column {self.name}: sqlite_type {self.sqlite_type!r} is not one "
                             f"of {SQLITE_TYPES}")
        if self.codec not in CODECS:
            raise ValueError(f"log column {self.name}: codec {self.codec!r} is not one of {CODECS}")

    def encode(self, value: Any) -> Any:
        """The value as SQLite stores it (None stays NULL)."""
        if value is None:
            return None
        if self.codec == "bool":  # bool("no") is True: only true/false (or 0/1) are a boolean
            if isinstance(value, str) or value not in (0, 1):
                raise ValueError(f"{self.name}: expected true or false, got {value!r}"[:120])
            return int(value)
        if self.codec == "json":
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return self._plain(value)

    def _plain(self, value: Any) -> Any:
        """A value SQLite can hold in this column, or ValueError (the writer drops the row and
        counts it: an int past 64 bits or a lone surrogate made SQLite raise on the writer
        thread, which died and took the whole batch and every later row with it). A non-finite
        REAL is NULL, as SQLite stores NaN: an exported ±inf is not JSON."""
        if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
            raise ValueError(f"{self.name}: the integer {str(value)[:20]}… does not fit 64 bits")
        if isinstance(value, float) and not math.isfinite(value) and self.sqlite_type == "REAL":
            return None
        if isinstance(value, str) and first_lone_surrogate(value) is not None:
            raise ValueError(f"{self.name}: the text holds a lone surrogate (not valid Unicode)")
        return value

    def decode(self, value: Any) -> Any:
        """The stored value back as the Python value it was written from (`UntrustedJSONError`
        for JSON text imad would not have written)."""
        if value is None:
            return None
        if self.codec == "bool":
            if isinstance(value, (str, bytes)) or value not in (0, 1):
                raise TypeError(f"{self.name} holds {value!r}, not 0 or 1")
            return bool(value)
        if self.codec == "json":  # a log file may come from anywhere: read it as untrusted
            return loads_untrusted(value, max_bytes=max(len(value), 1) * 4)
        if self.sqlite_type in ("REAL", "INTEGER") and isinstance(value, (str, bytes)):
            raise TypeError(f"{self.name} holds the text {value[:40]!r}, not a number")
        return value


_CODECS = {"boolean": "bool", "array": "json", "object": "json"}


def column_of(spec: Field) -> LogColumn:
    """The log column of one decision field (its `log` key, SQLite type, meaning and unit)."""
    unit = f" ({spec.unit})" if spec.unit else ""
    return LogColumn(spec.key("log"), spec.sqlite_type, spec.meaning + unit,
                     _CODECS.get(spec.type, "plain"))


LOG_COLUMNS: tuple[LogColumn, ...] = tuple(column_of(spec) for spec in fields_of("log"))
"""The decision log's columns: the decision schema's `log` view (`imad.decide.schema`), in its
order. A field the schema gains in that view is a column the next open adds to the file."""

REQUIRED_COLUMNS = (ID, TIME)


def check_columns(columns: Sequence[LogColumn]) -> tuple[LogColumn, ...]:
    """The list as a tuple, or ValueError when a name repeats or `ID`/`TIME` is missing."""
    names = [column.name for column in columns]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"log columns named twice: {', '.join(repeated)}")
    missing = [name for name in REQUIRED_COLUMNS if name not in names]
    if missing:
        raise ValueError(f"log columns lack {', '.join(missing)}")
    return tuple(columns)
