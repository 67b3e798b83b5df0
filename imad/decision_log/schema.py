"""The decision log's file format: a SQLite database, versioned, checked on every open.

Schema version 1 (one file, three tables):

- `meta(key TEXT PRIMARY KEY, value TEXT)`: `format` = "imad-decision-log", `schema_version`
  (an integer as text), `created` (unix seconds). A file without it, or with another `format`,
  is another program's database and is refused (`DecisionLogFormatError`); a `schema_version`
  above `SCHEMA_VERSION` was written by a newer imad and is refused (`DecisionLogVersionError`
  naming both versions), so an old reader never misreads a newer log; one that is missing, not
  an integer or below 1 is damage (`DecisionLogFormatError` naming the value).
- The tables must be the ones `table_ddl` creates (`check_shape`, `imad.decision_log.shape`):
  `decisions` a table, not a view, with its `UNIQUE(id)` (the writer's insert relies on it), its
  time index and label trigger, each column of its type and NOT NULL as imad declares it; the
  writer and every reader refuse a file that differs, listing what differs, before anything is
  written (otherwise its rows would be dropped, or read, wrongly).
- `decisions(seq INTEGER PRIMARY KEY AUTOINCREMENT, <one column per LogColumn>)`: one row per
  decision, `id` unique. `seq` is the insertion order; pruning (`max_rows`) deletes the lowest.
  A column the list gains later is added with `ALTER TABLE … ADD COLUMN` on open (older rows
  read NULL there); a column the file has and the list lacks is left alone.
- `labels(id TEXT PRIMARY KEY, correct INTEGER, debate_correct INTEGER, source TEXT, time REAL,
  changes INTEGER)`: the outcome of a decision (`correct`: the served single answer was right;
  `debate_correct`, optional: the debate's answer was), where it came from (user, judge, gold)
  and how many times it was replaced. Deleting a decision deletes its label (a trigger).

Journal: WAL, so readers (export, report) never block the writers and a killed writer leaves a
file that opens with every committed transaction. `synchronous=NORMAL` (measured in
benchmarks/bench_decision_log.py): in WAL mode it loses no committed row when a process dies,
only the last transactions on a power cut; FULL costs an fsync per batch.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import time
from collections.abc import Sequence
from pathlib import Path

from imad.decision_log.columns import ID, TIME, LogColumn
from imad.decision_log.shape import expected_catalogue, shape_problems, sqlite_catalogue
from imad.errors import DecisionLogError, DecisionLogFormatError, DecisionLogVersionError

FORMAT = "imad-decision-log"
SCHEMA_VERSION = 1
SQLITE_HEADER = b"SQLite format 3\x00"
LABEL_SOURCES = ("user", "judge", "gold")
SHOWN_PROBLEMS = 6
"""How many of a damaged log's shape problems its error lists."""

_UNWRITABLE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_FULL", "SQLITE_IOERR", "SQLITE_PERM",
               "SQLITE_AUTH")
_BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED")
_DAMAGED = ("SQLITE_NOTADB", "SQLITE_CORRUPT")


def error_kind(error: sqlite3.Error) -> str:
    """"unwritable", "busy", "damaged" or "other": what a SQLite error means for the log."""
    name = getattr(error, "sqlite_errorname", "") or ""
    text = str(error).lower()
    if name.startswith(_DAMAGED) or "not a database" in text or "malformed" in text:
        return "damaged"
    if name.startswith(_BUSY) or "locked" in text:
        return "busy"
    if name.startswith(_UNWRITABLE) or any(word in text for word in (
            "readonly", "read-only", "disk is full", "unable to open", "disk i/o")):
        return "unwritable"
    return "other"


def check_header(path: Path) -> None:
    """A non-empty file that does not start with SQLite's header is refused before SQLite sees
    it; so is a path under a file, and one that is not a regular file (reading a FIFO's header
    would wait for ever; /dev/null would pass for an empty log that drops every row)."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISREG(mode):
            with open(path, "rb") as handle:
                head = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except NotADirectoryError as error:
        raise DecisionLogError(f"decision log {path} lies under a file, not in a folder") from error
    except PermissionError:
        return  # SQLite will say it cannot open the file; the writer counts that as unwritable
    except OSError as error:  # a name too long, a loop of links, an I/O error
        raise DecisionLogError(f"decision log {path} cannot be opened: {error.strerror or error}") from None
    if stat.S_ISDIR(mode):
        raise DecisionLogError(f"decision log {path} is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise DecisionLogError(f"decision log {path} is not a regular file (a FIFO, a device or a "
                               "socket); give the path of a file")
    if head and head != SQLITE_HEADER:
        raise DecisionLogFormatError(f"{path} is not a SQLite database (its first bytes are "
                                     f"{head[:8]!r}); give a decision log imad wrote")


def table_ddl(columns: Sequence[LogColumn]) -> list[str]:
    """The statements that create an empty schema-1 log for `columns`."""
    body = ", ".join(f"{c.name} {c.sqlite_type}{' NOT NULL UNIQUE' if c.name == ID else ''}"
                     for c in columns)
    return [
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS decisions (seq INTEGER PRIMARY KEY AUTOINCREMENT, {body})",
        f"CREATE INDEX IF NOT EXISTS decisions_time ON decisions({TIME})",
        "CREATE TABLE IF NOT EXISTS labels (id TEXT PRIMARY KEY, correct INTEGER NOT NULL, "
        "debate_correct INTEGER, source TEXT NOT NULL, time REAL NOT NULL, "
        "changes INTEGER NOT NULL DEFAULT 0)",
        "CREATE TRIGGER IF NOT EXISTS decisions_drop_label AFTER DELETE ON decisions "
        f"BEGIN DELETE FROM labels WHERE id = old.{ID}; END",
    ]


def ensure_schema(connection: sqlite3.Connection, path: Path,
                  columns: Sequence[LogColumn]) -> None:
    """Create the schema in an empty file, or check the one there (format, version, columns).

    Runs in one `BEGIN IMMEDIATE` transaction, so two workers opening a new file at once create
    it once."""
    if refuse_foreign(connection, path, columns):
        if _missing_columns(connection, columns):
            _in_transaction(connection, lambda: _add_columns(connection, columns))
        return
    _in_transaction(connection, lambda: _create(connection, path, columns))


def refuse_foreign(connection: sqlite3.Connection, path: Path,
                   columns: Sequence[LogColumn]) -> bool:
    """Refuse a file that holds tables but is not a log this imad reads and writes (its meta
    header, then its tables' shape: `check_shape`); True when it is one, False when it is empty.
    Run before anything writes, so a refused file is left unchanged."""
    tables = _tables(connection, path)
    if tables and "meta" not in tables:
        raise DecisionLogFormatError(_foreign(path, f"it holds the tables {', '.join(sorted(tables))}"))
    if tables:
        check_meta(connection, path)
        check_shape(connection, path, columns)
    return bool(tables)


def check_shape(connection: sqlite3.Connection, path: Path, columns: Sequence[LogColumn]) -> None:
    """Refuse a log whose tables differ from the ones `table_ddl` creates (a view for a table, a
    lost UNIQUE, index or trigger, another column type): its rows would be dropped or misread.
    Columns the file lacks are not refused: the writer adds them, readers read NULL."""
    problems = shape_problems(expected_catalogue(tuple(table_ddl(columns))),
                              sqlite_catalogue(connection), growing=("decisions",))
    if problems:
        shown = "; ".join(problems[:SHOWN_PROBLEMS]) + (
            f"; and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else "")
        raise DecisionLogFormatError(f"decision log {path} is damaged: its tables are not the ones "
                                     f"imad writes ({shown}); move it aside and start a new log")


def check_meta(connection: sqlite3.Connection, path: Path) -> int:
    """The file's schema version, after checking it is an imad log this version can read."""
    try:
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as error:
        raise DecisionLogFormatError(_foreign(path, f"its meta table is unreadable ({error})")) from error
    if meta.get("format") != FORMAT:
        raise DecisionLogFormatError(_foreign(path, f"its meta table names format {meta.get('format')!r}"))
    if "schema_version" not in meta:
        raise DecisionLogFormatError(f"decision log {path}: its meta table has no schema_version; "
                                     "the file is damaged")
    stored = meta["schema_version"]
    if not (isinstance(stored, str) and re.fullmatch(r"-?[0-9]+", stored)):
        raise DecisionLogFormatError(
            f"decision log {path}: schema_version {stored!r} is not an integer; the file is damaged")
    version = int(stored)
    if version > SCHEMA_VERSION:
        raise DecisionLogVersionError(str(path), version, SCHEMA_VERSION)
    if version < 1:
        raise DecisionLogFormatError(
            f"decision log {path}: schema_version {stored!r} is not a version imad writes (1 to "
            f"{SCHEMA_VERSION}); the file is damaged")
    return version


def file_columns(connection: sqlite3.Connection) -> list[str]:
    """The names of the decision table's columns in the file (without `seq`)."""
    return [row[1] for row in connection.execute("PRAGMA table_info(decisions)") if row[1] != "seq"]


def _tables(connection: sqlite3.Connection, path: Path) -> set[str]:
    try:
        rows = connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
    except sqlite3.DatabaseError as error:
        if error_kind(error) == "damaged":
            raise DecisionLogFormatError(f"decision log {path} is damaged ({error}); move it aside "
                                         "and start a new log") from error
        raise
    return {row[0] for row in rows}


def _create(connection: sqlite3.Connection, path: Path, columns: Sequence[LogColumn]) -> None:
    if "meta" in _tables(connection, path):  # another process created it while we waited
        check_meta(connection, path)
        _add_columns(connection, columns)
        return
    for statement in table_ddl(columns):
        connection.execute(statement)
    connection.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", [
        ("format", FORMAT), ("schema_version", str(SCHEMA_VERSION)), ("created", repr(time.time()))])


def _missing_columns(connection: sqlite3.Connection, columns: Sequence[LogColumn]) -> list[LogColumn]:
    present = set(file_columns(connection))
    return [column for column in columns if column.name not in present]


def _add_columns(connection: sqlite3.Connection, columns: Sequence[LogColumn]) -> None:
    for column in _missing_columns(connection, columns):
        connection.execute(f"ALTER TABLE decisions ADD COLUMN {column.name} {column.sqlite_type}")


def _in_transaction(connection: sqlite3.Connection, work) -> None:
    connection.execute("BEGIN IMMEDIATE")
    try:
        work()
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def _foreign(path: Path, found: str) -> str:
    return (f"{path} is a SQLite database but not an imad decision log ({found}); give a decision "
            "log imad wrote, or a new path")
