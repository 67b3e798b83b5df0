"""A decision log in PostgreSQL: one log for every replica of a fleet (psycopg 3, a small pool).

`PostgresStore` is a `LogStore` whose connection is a database's: the readers' queries, the
label SQL and the row decoding are the SQLite store's, run through `Session` (which speaks
psycopg's `%s` for SQLite's `?`); only writing, pruning and streaming differ. A batch of rows goes in as one
`executemany` of `INSERT … ON CONFLICT (id) DO NOTHING` in pipeline mode (one round trip, one
transaction per batch; a replayed batch adds nothing twice). Measured against a multi-row
`INSERT … VALUES (…), (…)`, whose 20,000 placeholders psycopg parses in Python on every batch,
it costs a tenth of the insert's client CPU per row (benchmarks/bench_decision_log_stores.py).

A database that goes away is waited for, not given up on: `insert` and `amend` try again (with
a growing pause, at most `MAX_RETRY_PAUSE_S`) until the database answers or the log closes
(`stop`), so the writer's bounded queue absorbs an outage and writing resumes by itself. A row
whose value PostgreSQL cannot hold (a NUL character in text, a number in a text column) is
refused alone (`InsertResult.rejected`), not with its whole batch. Every error is a
`DecisionLogDatabaseError` whose message never holds the password.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from imad.decision_log.columns import ID, LogColumn, check_columns
from imad.decision_log.postgres_errors import database_error, transient
from imad.decision_log.postgres_schema import ensure_schema
from imad.decision_log.store import InsertResult, LogStore
from imad.decision_log.url import POSTGRES_EXTRA, LogLocation
from imad.errors import DecisionLogDatabaseError, MissingDependencyError

logger = logging.getLogger("imad.decision_log")

T = TypeVar("T")
CONNECT_TIMEOUT_S = 5
"""How long one connection attempt waits (libpq's connect_timeout) unless the URL sets one."""
POOL_SIZE = 2
"""Connections per writing process: the writer thread's, and one for a label beside it."""
MAX_RETRY_PAUSE_S = 2.0
_READ_CHUNK = 2_000


class Session:
    """A psycopg connection that runs the SQLite store's SQL (`?` placeholders); every driver
    error comes out as a redacted `DecisionLogDatabaseError`."""

    def __init__(self, connection: Any, shown: str, url: str) -> None:
        self._connection = connection
        self._shown, self._url = shown, url

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with driver_errors(self._shown, self._url):
            return self._connection.execute(_placeholders(sql), params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any:
        with driver_errors(self._shown, self._url):
            cursor = self._connection.cursor()
            cursor.executemany(_placeholders(sql), rows)
            return cursor

    def stream(self, sql: str, params: Sequence[Any], chunk: int) -> Iterator[tuple[Any, ...]]:
        """A query's rows through a server-side cursor, `chunk` rows at a time (in a transaction)."""
        with driver_errors(self._shown, self._url):
            cursor = self._connection.cursor(name="imad_rows")
            cursor.itersize = chunk
            cursor.execute(_placeholders(sql), params)
            yield from cursor


@contextmanager
def driver_errors(shown: str, url: str) -> Iterator[None]:
    """psycopg's errors (and the pool's) as the redacted `DecisionLogDatabaseError`."""
    import psycopg

    try:
        yield
    except psycopg.Error as error:
        raise database_error(error, shown, url) from None


class PostgresStore(LogStore):
    """An open decision log in a PostgreSQL database, its tables checked."""

    def __init__(self, location: LogLocation, pool: Any, columns: Sequence[LogColumn],
                 present: set[str], *, stop: threading.Event | None = None) -> None:
        self.location, self.pool, self.stop = location, pool, stop
        super().__init__(_PooledSession(self), location.shown, columns, present)
        self._waiting = self._gave_up = False

    # --- writing -----------------------------------------------------------------------------

    def insert(self, encoded_rows: Sequence[tuple[Any, ...]]) -> InsertResult:
        """Insert encoded rows in one transaction; rows PostgreSQL cannot hold are `rejected`."""
        rows = [row for row in encoded_rows if self._fits(row)]
        inserted = self._retrying(
            lambda session: max(session.executemany(self._insert, rows).rowcount, 0)) if rows else 0
        return InsertResult(inserted, len(rows) - inserted, len(encoded_rows) - len(rows))

    def amend(self, encoded: dict[str, Any]) -> bool:
        names = [name for name in encoded if name != ID]
        if not names:
            return True
        if not self._fits(tuple(encoded[name] for name in names), [self._by_name[n] for n in names]):
            raise DecisionLogDatabaseError(f"decision log {self.path}: an amendment holds a value "
                                           "PostgreSQL cannot store (a NUL character?)", "other")
        sql = f"UPDATE decisions SET {', '.join(f'{name} = ?' for name in names)} WHERE {ID} = ?"
        params = [*(encoded[name] for name in names), encoded[ID]]
        return self._retrying(lambda session: session.execute(sql, params).rowcount > 0)

    def prune(self, max_rows: int) -> int:
        """Delete the oldest decisions beyond `max_rows`, with their labels (every replica's)."""
        def work(session: Session) -> int:
            top = session.execute("SELECT max(seq) FROM decisions").fetchone()[0]
            if top is None or top <= max_rows:
                return 0
            session.execute("DELETE FROM labels WHERE id IN (SELECT id FROM decisions WHERE "
                            "seq <= ?)", (top - max_rows,))
            return max(session.execute("DELETE FROM decisions WHERE seq <= ?",
                                       (top - max_rows,)).rowcount, 0)

        return self._retrying(work)

    @contextmanager
    def transaction(self) -> Iterator[Session]:  # type: ignore[override]
        """`with store.transaction() as session:` one transaction on one pooled connection."""
        with driver_errors(self.path, self.location.given), self.pool.connection() as connection, \
                connection.transaction():
            yield Session(connection, self.path, self.location.given)

    def close(self) -> None:
        self.pool.close()

    # --- reading -----------------------------------------------------------------------------

    def _read(self, sql: str, params: list[Any]) -> Iterator[tuple[Any, ...]]:
        """Stream a query's rows through a server-side cursor (a large log is never held whole)."""
        with self.transaction() as session:
            yield from session.stream(sql, params, _READ_CHUNK)

    # --- helpers -----------------------------------------------------------------------------

    def _retrying(self, work: Callable[[Session], T]) -> T:
        """`work` in one transaction, tried again while the database cannot be reached (until
        `stop` is set); any other failure is raised at once."""
        pause = 0.05
        while True:
            if self._gave_up:  # closing, the database gone: the rest fail at once, not each after a wait
                raise DecisionLogDatabaseError(f"decision log {self.path} could not be reached when "
                                               "the log closed", "unreachable")
            try:
                with self.transaction() as session:
                    result = work(session)
                if self._waiting:
                    self._waiting = False
                    logger.warning("decision log: %s answers again; writing resumes", self.path)
                return result
            except DecisionLogDatabaseError as error:
                if not transient(error) or self.stop is None or self.stop.is_set():
                    self._gave_up = transient(error) and self.stop is not None and self.stop.is_set()
                    raise
                if not self._waiting:
                    self._waiting = True
                    logger.warning("decision log: %s; rows wait in the queue until it answers",
                                   error)
            self.stop.wait(pause)
            pause = min(pause * 2, MAX_RETRY_PAUSE_S)

    def _fits(self, row: tuple[Any, ...], columns: Sequence[LogColumn] | None = None) -> bool:
        """Whether PostgreSQL's typed columns take each value (SQLite takes anything)."""
        for column, value in zip(self.columns if columns is None else columns, row, strict=True):
            if value is None:
                continue
            kind = column.sqlite_type
            if kind == "TEXT" and (not isinstance(value, str) or "\x00" in value):
                return False
            if kind != "TEXT" and (isinstance(value, str) or not isinstance(value, (int, float))):
                return False
        return True


class _PooledSession:
    """`store.connection` for the SQLite store's one-off queries: each borrows a pooled connection."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._store.transaction() as session:
            cursor = session.execute(sql, params)
            return _Result(cursor.fetchall() if cursor.description else [], cursor.rowcount)


class _Result:
    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self.rows, self.rowcount = rows, rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.rows)


def open_database(location: LogLocation, columns: Sequence[LogColumn], *, create: bool,
                  writable: bool = True, stop: threading.Event | None = None) -> PostgresStore:
    """Connect, check (or, with `create`, create or migrate) the log's tables, and open a pool.

    Every failure — no driver, an unreachable host, wrong credentials, a role that may not
    create tables, a foreign or newer table — is a typed error naming the database (redacted)."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
        from psycopg_pool import ConnectionPool
    except ImportError as error:
        raise MissingDependencyError("psycopg", POSTGRES_EXTRA, "a decision log in PostgreSQL") from error
    columns = check_columns(columns)
    options = connect_options(location.given, writable=writable)
    try:
        with psycopg.connect(location.given, **options) as connection:
            present = ensure_schema(connection, location.shown, columns, create=create)
    except psycopg.Error as error:
        raise database_error(error, location.shown, location.given, opening=True) from None
    pool_logger = logging.getLogger("psycopg.pool")
    if pool_logger.level == logging.NOTSET:  # its line per failed attempt would flood an outage:
        pool_logger.setLevel(logging.ERROR)  # the store says it once (`_retrying`)
    wait_s = float(conninfo_to_dict(location.given).get("connect_timeout", CONNECT_TIMEOUT_S)) + 1
    # reconnect_timeout=0: the pool does not retry on its own schedule; each store call that
    # finds no connection asks for one, paced by `PostgresStore._retrying`
    pool = ConnectionPool(location.given, min_size=1, max_size=POOL_SIZE, kwargs=options,
                          open=True, name="imad-decision-log", timeout=wait_s, reconnect_timeout=0)
    return PostgresStore(location, pool, columns, present, stop=stop)


def connect_options(url: str, *, writable: bool) -> dict[str, Any]:
    """The connection's settings: autocommit (each store call opens its own transaction), an
    application name and a connect timeout unless the URL gives them, read-only for a reader."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url)
    options: dict[str, Any] = {"autocommit": True}
    if "connect_timeout" not in given:
        options["connect_timeout"] = CONNECT_TIMEOUT_S
    if "application_name" not in given:
        options["application_name"] = "imad"
    if not writable:
        options["options"] = (given.get("options", "") + " -c default_transaction_read_only=on").strip()
    return options


def _placeholders(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


__all__ = ["PostgresStore", "Session", "connect_options", "driver_errors", "open_database"]
