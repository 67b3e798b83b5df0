"""The decision log's schema in PostgreSQL: the SQLite file's three tables, created or checked.

The same schema version, the same `meta` rows (`format`, `schema_version`, `created`), the same
`decisions` and `labels` columns (SQLite's TEXT, REAL and INTEGER as text, double precision and
bigint) and the same migration: a column the decision schema gains is added to `decisions` on
open. The tables live in the connection's current schema (`?options=-csearch_path%3Dimad`
in the URL picks another), beside any other tables of the database; a `decisions` or `labels`
table without imad's `meta` rows is another program's, and is refused, never altered.

Replicas starting at once take one transaction-scoped advisory lock, so the tables are created
once. Every failure is a `DecisionLogDatabaseError` naming the database (redacted) and what to do.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from imad.decision_log.columns import ID, TIME, LogColumn
from imad.decision_log.schema import FORMAT, SCHEMA_VERSION
from imad.errors import DecisionLogDatabaseError

POSTGRES_TYPES = {"TEXT": "text", "REAL": "double precision", "INTEGER": "bigint"}
TABLES = ("meta", "decisions", "labels")
SCHEMA_LOCK = 0x696D6164  # "imad": one advisory lock key for every imad log creating its tables


def table_ddl(columns: Sequence[LogColumn]) -> list[str]:
    """The statements that create an empty log for `columns`."""
    body = ", ".join(f"{c.name} {POSTGRES_TYPES[c.sqlite_type]}"
                     f"{' NOT NULL UNIQUE' if c.name == ID else ''}" for c in columns)
    return [
        "CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)",
        f"CREATE TABLE decisions (seq bigserial PRIMARY KEY, {body})",
        f"CREATE INDEX decisions_time ON decisions ({TIME})",
        "CREATE TABLE labels (id text PRIMARY KEY, correct bigint NOT NULL, debate_correct bigint, "
        "source text NOT NULL, time double precision NOT NULL, changes bigint NOT NULL DEFAULT 0)",
    ]


def ensure_schema(connection: Any, shown: str, columns: Sequence[LogColumn], *,
                  create: bool) -> set[str]:
    """Check the log's tables (creating them when `create` and none exist); the names of the
    `decisions` columns present. Runs in one transaction under the schema lock."""
    with connection.transaction():
        if create:
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        tables = _tables(connection)
        if not tables and create:
            for statement in table_ddl(columns):
                connection.execute(statement)
            connection.cursor().executemany("INSERT INTO meta (key, value) VALUES (%s, %s)", [
                ("format", FORMAT), ("schema_version", str(SCHEMA_VERSION)),
                ("created", repr(time.time()))])
            return {column.name for column in columns}
        check_tables(connection, shown, tables)
        present = _columns(connection)
        missing = [column for column in columns if column.name not in present]
        if missing and create:
            for column in missing:
                connection.execute(f"ALTER TABLE decisions ADD COLUMN IF NOT EXISTS {column.name} "
                                   f"{POSTGRES_TYPES[column.sqlite_type]}")
            present |= {column.name for column in missing}
        return present


def check_tables(connection: Any, shown: str, tables: dict[str, str]) -> int:
    """The log's schema version, after checking its tables are an imad log this version reads."""
    where = f"decision log {shown} (schema {connection.execute('SELECT current_schema()').fetchone()[0]})"
    if not tables:
        raise DecisionLogDatabaseError(f"{where} holds no decision log (no meta, decisions or labels "
                                       "table); start imad serve --decision-log with this URL to "
                                       "create one", "damaged")
    if "meta" not in tables:
        raise DecisionLogDatabaseError(_foreign(where, f"it has {', '.join(sorted(tables))} but no "
                                                "meta table"), "damaged")
    not_tables = sorted(name for name, kind in tables.items() if kind != "BASE TABLE")
    if not_tables:
        raise DecisionLogDatabaseError(_foreign(where, f"{', '.join(not_tables)} is a view or another "
                                                "kind of relation, not a table"), "damaged")
    meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("format") != FORMAT:
        raise DecisionLogDatabaseError(_foreign(where, f"its meta table names format "
                                                f"{meta.get('format')!r}"), "damaged")
    try:
        version = int(meta.get("schema_version", ""))
    except ValueError:
        raise DecisionLogDatabaseError(f"{where}: schema_version {meta.get('schema_version')!r} "
                                       "is not an integer; the meta table is damaged", "damaged") from None
    if version > SCHEMA_VERSION:
        raise DecisionLogDatabaseError(f"{where} has schema version {version}, newer than the "
                                       f"version {SCHEMA_VERSION} this imad reads; upgrade imad",
                                       "damaged")
    missing = sorted(set(TABLES) - set(tables))
    if missing:
        raise DecisionLogDatabaseError(f"{where} lacks the table(s) {', '.join(missing)}; the log "
                                       "is damaged", "damaged")
    return version


def _tables(connection: Any) -> dict[str, str]:
    rows = connection.execute(
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_schema = current_schema() AND table_name = ANY(%s)", (list(TABLES),)).fetchall()
    return dict(rows)


def _columns(connection: Any) -> set[str]:
    rows = connection.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'decisions'").fetchall()
    return {row[0] for row in rows} - {"seq"}


def _foreign(where: str, found: str) -> str:
    return (f"{where} is not an imad decision log ({found}); give another database or pick "
            "another schema with ?options=-csearch_path%3DNAME in the URL")
