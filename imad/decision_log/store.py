"""One process's connection to a decision log: open and check it, insert, prune, read.

Each process (each server worker, each `imad ask`) opens its own connection; SQLite's file
locks and WAL journal make concurrent writers from several processes safe, and the unique `id`
makes a repeated insert of the same decision a no-op (counted as a duplicate, never a second
row). Writers wait up to `busy_timeout_s` for another process's transaction; readers never
wait for writers. The writer thread (`imad.decision_log.writer`) is the only caller on the
serving path; the CLI's export, label and report commands read through
`imad.decision_log.location.open_for_reading`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

from imad.decision_log.columns import ID, LOG_COLUMNS, MODEL, TIME, LogColumn, check_columns, is_log_time
from imad.decision_log.schema import (
    check_header,
    ensure_schema,
    error_kind,
    file_columns,
    refuse_foreign,
)
from imad.errors import DecisionLogError, DecisionLogFormatError
from imad.jsonio import UntrustedJSONError

SYNCHRONOUS_MODES = ("NORMAL", "FULL")
DEFAULT_BUSY_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class InsertResult:
    """What one batch did: rows added, rows skipped because their id was already logged, and
    rows the store could not hold (a database's typed columns; SQLite takes every row)."""

    inserted: int
    duplicates: int
    rejected: int = 0


_LABEL_CORRECT = LogColumn("correct", "INTEGER", "the label: the served answer was right", "bool")
_LABEL_DEBATE = LogColumn("debate_correct", "INTEGER", "the label of the debate's answer", "bool")
"""The label table's booleans, read as the decision columns' are (5 or 'x' is damage, not true)."""


class LogStore:
    """An open decision log (one SQLite connection), its schema checked."""

    def __init__(self, connection: sqlite3.Connection, path: Path,
                 columns: Sequence[LogColumn], present: Collection[str] | None = None) -> None:
        """`present`: the columns the table has (default: read from the file)."""
        self.connection = connection
        self.path = path
        self.columns = tuple(columns)
        present = set(file_columns(connection) if present is None else present)
        self._by_name = {column.name: column for column in self.columns}
        self.readable = tuple(column for column in self.columns if column.name in present)
        names = ", ".join(column.name for column in self.columns)
        marks = ", ".join("?" for _ in self.columns)
        self._insert = (f"INSERT INTO decisions ({names}) VALUES ({marks}) "
                        f"ON CONFLICT({ID}) DO NOTHING")

    def insert(self, encoded_rows: Sequence[tuple[Any, ...]]) -> InsertResult:
        """Insert encoded rows in one transaction (all or none of them are written)."""
        before = self.connection.total_changes
        with self.transaction():
            self.connection.executemany(self._insert, encoded_rows)
        inserted = self.connection.total_changes - before
        return InsertResult(inserted, len(encoded_rows) - inserted)

    def amend(self, encoded: dict[str, Any]) -> bool:
        """Set encoded column values on the row with the id `encoded[ID]`; False when there is none."""
        names = [name for name in encoded if name != ID]
        if not names:
            return True
        with self.transaction():
            cursor = self.connection.execute(
                f"UPDATE decisions SET {', '.join(f'{name} = ?' for name in names)} WHERE {ID} = ?",
                [*(encoded[name] for name in names), encoded[ID]])
        return cursor.rowcount > 0

    def prune(self, max_rows: int) -> int:
        """Delete the oldest decisions beyond `max_rows` (and their labels); the number deleted.

        `seq` grows by one per insert, so the rows to keep are the top `max_rows` of it: one
        indexed range delete, no count over the table."""
        with self.transaction():
            cursor = self.connection.execute(
                "DELETE FROM decisions WHERE seq <= (SELECT max(seq) FROM decisions) - ?", (max_rows,))
        return max(cursor.rowcount, 0)  # the statement's own rows, not the trigger's label deletes

    def count(self) -> int:
        return int(self.connection.execute("SELECT count(*) FROM decisions").fetchone()[0])

    def rows(self, *, since: float | None = None, until: float | None = None,
             model: str | None = None, names: Sequence[str] | None = None
             ) -> Iterator[dict[str, Any]]:
        """Decoded decisions in time order, each with its label fields (`correct`,
        `debate_correct`, `label_source`, `label_time`, `label_changes`; None when unlabelled).

        `names`: only these columns (those the file lacks read None), so a report over a large
        log does not decode every row's features. `time` is always read and checked, so every
        reader refuses the same damaged rows."""
        readable = self.readable if names is None else tuple(
            column for column in self.readable if column.name in {*names, TIME})
        missing = () if names is None else tuple(
            name for name in names if name not in {column.name for column in readable})
        selected = ", ".join(f"d.{column.name}" for column in readable)
        where, params = [], []
        for clause, value in ((f"d.{TIME} >= ?", since), (f"d.{TIME} < ?", until),
                              (f"d.{MODEL} = ?", model)):
            if value is not None:
                where.append(clause)
                params.append(value)
        sql = (f"SELECT {selected}, l.correct, l.debate_correct, l.source, l.time, l.changes "
               f"FROM decisions d LEFT JOIN labels l ON l.id = d.{ID}"
               + (f" WHERE {' AND '.join(where)}" if where else "") + f" ORDER BY d.{TIME}, d.seq")
        width = len(readable)
        for values in self._read(sql, params):
            try:
                row = {column.name: column.decode(value)
                       for column, value in zip(readable, values[:width], strict=True)}
                if TIME in row and not is_log_time(row[TIME]):
                    raise TypeError(f"{TIME} holds {row[TIME]!r}, not unix seconds in [1970, 3000)")
                correct, debate_correct, source, label_time, changes = values[width:]
                row.update(correct=_LABEL_CORRECT.decode(correct),
                           debate_correct=_LABEL_DEBATE.decode(debate_correct),
                           label_source=source, label_time=label_time, label_changes=changes)
            except (UntrustedJSONError, TypeError) as error:
                raise DecisionLogFormatError(f"decision log {self.path}: a row holds a value imad "
                                             f"did not write ({error}); the file is damaged") from error
            row.update(dict.fromkeys(missing))
            yield row

    def transaction(self) -> _Transaction:
        """`with store.transaction():` one `BEGIN IMMEDIATE … COMMIT` (rolled back on error)."""
        return _Transaction(self.connection)

    def close(self) -> None:
        self.connection.close()

    def _read(self, sql: str, params: list[Any]) -> Iterator[tuple[Any, ...]]:
        try:
            yield from self.connection.execute(sql, params)
        except sqlite3.DatabaseError as error:
            raise read_error(self.path, error) from error


class _Transaction:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def __enter__(self) -> sqlite3.Connection:
        self.connection.execute("BEGIN IMMEDIATE")
        return self.connection

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.connection.execute("COMMIT")
        elif self.connection.in_transaction:
            self.connection.execute("ROLLBACK")


def open_store(path: str | Path, columns: Sequence[LogColumn] = LOG_COLUMNS, *,
               busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
               synchronous: str = "NORMAL") -> LogStore:
    """Open (creating when new) a log for writing: WAL, `synchronous`, busy timeout, schema checked.

    Raises `DecisionLogFormatError`/`DecisionLogVersionError` for a file that is not a log this
    imad can write, and `sqlite3.Error` for a disk that refuses it (the writer turns that into
    dropped rows)."""
    path = Path(path)
    columns = check_columns(columns)
    if synchronous not in SYNCHRONOUS_MODES:
        raise ValueError(f"synchronous must be one of {SYNCHRONOUS_MODES}, not {synchronous!r}")
    check_header(path)
    connection = sqlite3.connect(str(path), timeout=busy_timeout_s, isolation_level=None,
                                 check_same_thread=False)
    try:
        refuse_foreign(connection, path, columns)  # before WAL mode changes the file's header
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={synchronous}")
        ensure_schema(connection, path, columns)
        return LogStore(connection, path, columns)
    except sqlite3.Error as error:
        connection.close()
        if error_kind(error) == "damaged":  # a wrong file, not a failing disk: refuse it
            raise read_error(path, error) from error
        raise
    except BaseException:
        connection.close()
        raise


def open_file_for_reading(path: str | Path, columns: Sequence[LogColumn] = LOG_COLUMNS, *,
                          busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
                          writable: bool = False) -> LogStore:
    """Open an existing SQLite log for the CLI: every failure is a typed error. `writable`: the
    labels are written (`imad log label`); otherwise the file is opened read-only and never
    changed. (`imad.decision_log.location.open_for_reading` opens a file or a database.)"""
    path = Path(path)
    check_header(path)  # a directory, a FIFO, a foreign file, a path that cannot be opened
    if not path.exists():
        raise DecisionLogError(f"decision log {path} not found; start imad with --decision-log "
                               f"{path} to write one")
    mode = "rw" if writable else "ro"
    try:
        connection = sqlite3.connect(f"file:{pathname2url(str(path.resolve()))}?mode={mode}",
                                     uri=True, timeout=busy_timeout_s, isolation_level=None)
    except sqlite3.Error as error:
        raise read_error(path, error) from error
    try:
        if path.stat().st_size == 0:
            raise DecisionLogFormatError(f"decision log {path} is empty; no decision was logged")
        columns = check_columns(columns)
        ensure_readable(connection, path, columns)
        return LogStore(connection, path, columns)
    except sqlite3.Error as error:
        connection.close()
        raise read_error(path, error) from error
    except BaseException:
        connection.close()
        raise


def ensure_readable(connection: sqlite3.Connection, path: Path, columns: Sequence[LogColumn]) -> None:
    """Check format, version and the tables' shape without creating anything (a reader never
    writes the schema): the writer's rule (`refuse_foreign`), and a file without tables is refused."""
    if not refuse_foreign(connection, path, columns):
        raise DecisionLogFormatError(f"{path} is a SQLite database but not an imad decision log "
                                     "(it holds no tables); give a decision log imad wrote")


def read_error(path: Path, error: sqlite3.Error) -> DecisionLogError:
    """A SQLite failure while the CLI reads or labels a log, as the typed error users see."""
    kind = error_kind(error)
    if kind == "damaged":
        return DecisionLogFormatError(f"decision log {path} is damaged ({error}); a copy may be "
                                      "recoverable with `sqlite3 FILE .recover`")
    if kind == "busy":
        return DecisionLogError(f"decision log {path} is locked by another process ({error}); "
                                "try again when its transaction ends")
    if kind == "unwritable":
        return DecisionLogError(f"decision log {path} cannot be opened or written ({error}); check "
                                "the file's and its folder's permissions and free space")
    return DecisionLogError(f"decision log {path}: {error}")
