"""Which store a `--decision-log` / `--log` value opens: a SQLite file or a PostgreSQL database.

The value is parsed by `imad.decision_log.url`; the writer opens its store with
`open_writer_store`, every reader (report, export, labels, calibrate, certify) with
`open_for_reading`, the one place that turns a location into a store of either kind.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from imad.decision_log.columns import LOG_COLUMNS, LogColumn
from imad.decision_log.store import DEFAULT_BUSY_TIMEOUT_S, LogStore, open_file_for_reading, open_store
from imad.decision_log.url import LogLocation, database_location


def open_writer_store(location: LogLocation, columns: Sequence[LogColumn] = LOG_COLUMNS, *,
                      stop: threading.Event | None = None, **options: Any) -> LogStore:
    """The store a writer writes through (created when new). `stop`, for a database: set when
    the log closes, so a writer waiting for the database to come back stops waiting."""
    if not location.database:
        return open_store(location.given, columns, **options)
    from imad.decision_log.postgres import open_database

    return open_database(location, columns, stop=stop, create=True)


def open_reader_store(location: LogLocation, columns: Sequence[LogColumn] = LOG_COLUMNS, *,
                      writable: bool = False) -> LogStore:
    """The store a reader (report, export, labels, calibrate) reads through; never creates."""
    from imad.decision_log.postgres import open_database

    return open_database(location, columns, create=False, writable=writable)


def open_for_reading(path: str | Path, columns: Sequence[LogColumn] = LOG_COLUMNS, *,
                     busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
                     writable: bool = False) -> LogStore:
    """Open an existing log for the CLI (export, report, labels): every failure is a typed error.

    `writable`: the labels are written (`imad log label`); otherwise a file is opened read-only
    and never changed. A postgresql:// URL opens the database's log instead."""
    database = database_location(path, "--log")
    if database is not None:
        return open_reader_store(database, columns, writable=writable)
    return open_file_for_reading(path, columns, busy_timeout_s=busy_timeout_s, writable=writable)
