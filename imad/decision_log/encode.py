"""What goes into a decision-log row: the checks a row passes, the text it may hold, the options.

Without `log_text` the question text is not stored (its SHA-256 is) and each answer is stored
as `sha256:` of its normalised text (case and runs of space folded), so the report can still
tell whether a debate changed an answer without the log holding what users asked. The writer
(`imad.decision_log.writer`) calls `encode_row` on its own thread, never on the request's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from imad.decision_log.columns import ID, TIME, LogColumn, is_log_time
from imad.decision_log.store import SYNCHRONOUS_MODES
from imad.errors import ConfigError

TEXT_COLUMNS = ("single_answer", "debate_answer")
HASH_PREFIX = "sha256:"
MAX_COUNT = 1_000_000_000
"""Largest max_rows, queue or batch size accepted (a billion rows is ~2 TB of log)."""


def encode_row(row: Mapping[str, Any], columns: Sequence[LogColumn], *, log_text: bool
               ) -> tuple[Any, ...]:
    """The row's values in column order (NULL where it has none); ValueError for a row whose
    time is not unix seconds in [1970, 3000) (every reader windows and sorts by it: a NULL or
    1e20 time broke the report)."""
    moment = row.get(TIME)
    if not is_log_time(moment):
        raise ValueError(f"{TIME} must be unix seconds between 1970 and 3000, got {moment!r}"[:120])
    values = encode_values(row, columns, log_text=log_text)
    return tuple(values.get(column.name) for column in columns)


def encode_values(row: Mapping[str, Any], columns: Sequence[LogColumn], *, log_text: bool
                  ) -> dict[str, Any]:
    """The row's own values as SQLite stores them, by column name; ValueError for a row without
    an id or with a key that is not a column."""
    values = dict(row)
    if not isinstance(values.get(ID), str) or not values[ID]:
        raise ValueError("the row has no completion id")
    if values.get("question") is not None and values.get("question_sha256") is None:
        values["question_sha256"] = sha256_text(values["question"])
    if not log_text:
        values.pop("question", None)
        for name in TEXT_COLUMNS:
            if values.get(name) is not None:
                values[name] = HASH_PREFIX + sha256_text(normalise_answer(values[name]))
    by_name = {column.name: column for column in columns}
    unknown = set(values) - set(by_name)
    if unknown:
        raise ValueError(f"unknown column(s) {', '.join(sorted(unknown))}")
    return {name: by_name[name].encode(value) for name, value in values.items()}


OPTION_FLAGS = {"max_rows": "--decision-log-max-rows", "queue_size": "queue_size",
                "batch_size": "batch_size", "synchronous": "synchronous",
                "busy_timeout_s": "busy_timeout_s"}


def check_options(*, max_rows: int | None, queue_size: int, batch_size: int, synchronous: str,
                  busy_timeout_s: float) -> None:
    """`ConfigError` naming the option (and its flag) that is out of range."""
    def refuse(name: str, allowed: str, value: object) -> None:
        raise ConfigError(OPTION_FLAGS[name], f"must be {allowed}, got {value!r}")

    for name, value, low in (("max_rows", max_rows, 1), ("queue_size", queue_size, 1),
                             ("batch_size", batch_size, 1)):
        if value is None and name == "max_rows":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_COUNT:
            refuse(name, f"an integer in [{low}, {MAX_COUNT:,}]", value)
    if synchronous not in SYNCHRONOUS_MODES:
        refuse("synchronous", f"one of {', '.join(SYNCHRONOUS_MODES)}", synchronous)
    if isinstance(busy_timeout_s, bool) or not isinstance(busy_timeout_s, (int, float)) \
            or not 0.0 <= busy_timeout_s <= 3600.0:
        refuse("busy_timeout_s", "a number of seconds in [0, 3600]", busy_timeout_s)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def normalise_answer(text: str) -> str:
    """Answers compare equal when they differ only in case and surrounding space."""
    return " ".join(str(text).split()).casefold()
