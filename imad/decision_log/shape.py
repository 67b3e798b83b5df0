"""The shape of a decision log's tables, and what a file's shape lacks of the one imad writes.

A file whose `meta` header is right can still hold a `decisions` table that drops every row: a
view in its place, a table recreated without `UNIQUE(response_id)` (the insert's `ON CONFLICT`
needs it), a column declared with another type, a `NOT NULL` imad's rows do not fill. Opening
such a file is refused, by the writer and by every reader, naming what is wrong.

The expected shape is read back from the statements that create a new log
(`imad.decision_log.schema.table_ddl`), run on an empty in-memory database, so there is one
description of the schema. `shape_problems` compares two catalogues and knows nothing of
SQLite: another store (PostgreSQL) reads its own catalogue into the same `TableShape`s.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class ColumnShape:
    """One column as the catalogue declares it (`type`: what its values are stored as)."""

    name: str
    type: str
    not_null: bool
    primary_key: bool
    has_default: bool


@dataclass(frozen=True)
class TableShape:
    """A table (or a view standing where a table should be): columns, keys, indices, triggers.

    `unique`: the column tuples a full (not partial) unique index covers (a UNIQUE constraint, a
    primary key other than the rowid), which an `ON CONFLICT` target and a lookup by id rely
    on; `indexed`: those of plain indices."""

    name: str
    kind: str
    columns: tuple[ColumnShape, ...]
    unique: frozenset[tuple[str, ...]] = frozenset()
    indexed: frozenset[tuple[str, ...]] = frozenset()
    triggers: frozenset[str] = frozenset()

    def column(self, name: str) -> ColumnShape | None:
        return next((column for column in self.columns if column.name == name), None)


Catalogue = Mapping[str, TableShape]
"""Tables and views by name."""


def shape_problems(expected: Catalogue, actual: Catalogue, *,
                   growing: Collection[str] = ()) -> list[str]:
    """What `actual` lacks or declares differently from `expected`, one phrase each (empty when
    a writer and a reader can use it). Extra tables, columns and indices are left alone, except
    an extra column that is NOT NULL without a default (imad's inserts would fail on it).

    `growing`: tables whose missing columns are not a problem (the writer adds them on open;
    readers read NULL there)."""
    problems: list[str] = []
    for name, want in expected.items():
        have = actual.get(name)
        if have is None:
            problems.append(f"it has no {name} table")
            continue
        if have.kind != want.kind:
            problems.append(f"{name} is a {have.kind}, not a {want.kind}")
            continue
        problems += [f"{name} lacks UNIQUE({', '.join(columns)})"
                     for columns in sorted(want.unique - have.unique)]
        problems += [f"{name} lacks its index on ({', '.join(columns)})"
                     for columns in sorted(want.indexed - have.indexed - have.unique)]
        problems += [f"{name} lacks the trigger {trigger}"
                     for trigger in sorted(want.triggers - have.triggers)]
        problems += _column_problems(want, have, growing=name in growing)
    return problems


def _column_problems(want: TableShape, have: TableShape, *, growing: bool) -> list[str]:
    problems = []
    for column in want.columns:
        found = have.column(column.name)
        if found is None:
            if not growing:
                problems.append(f"{want.name} has no column {column.name}")
            continue
        where = f"{want.name}.{column.name}"
        if found.type != column.type:
            problems.append(f"{where} holds {found.type}, not {column.type}")
        if found.not_null != column.not_null:
            problems.append(f"{where} is{_not(found.not_null)} NOT NULL (imad's is"
                            f"{_not(column.not_null)})")
        if found.primary_key != column.primary_key:
            problems.append(f"{where} is{_not(found.primary_key)} the primary key (imad's is"
                            f"{_not(column.primary_key)})")
    expected_names = {column.name for column in want.columns}
    problems += [f"{want.name}.{column.name} is NOT NULL without a default, and imad does not "
                 "write it" for column in have.columns
                 if column.name not in expected_names and column.not_null
                 and not column.has_default and not column.primary_key]
    return problems


def _not(flag: bool) -> str:
    return "" if flag else " not"


def sqlite_catalogue(connection: sqlite3.Connection) -> dict[str, TableShape]:
    """The tables and views of a SQLite database as `TableShape`s (SQLite's own tables left out)."""
    objects = connection.execute(
        "SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('table', 'view', 'trigger') "
        "AND name NOT LIKE 'sqlite_%'").fetchall()
    triggers: dict[str, set[str]] = {}
    for kind, name, table in objects:
        if kind == "trigger":
            triggers.setdefault(table, set()).add(name)
    return {name: _sqlite_table(connection, name, kind, frozenset(triggers.get(name, ())))
            for kind, name, _ in objects if kind != "trigger"}


def _sqlite_table(connection: sqlite3.Connection, name: str, kind: str,
                  triggers: frozenset[str]) -> TableShape:
    info = connection.execute("SELECT name, type, \"notnull\", dflt_value, pk "
                              "FROM pragma_table_info(?)", (name,)).fetchall()
    columns = tuple(ColumnShape(column, sqlite_affinity(declared), bool(not_null), pk > 0,
                                default is not None)
                    for column, declared, not_null, default, pk in info)
    unique: set[tuple[str, ...]] = set()  # a key other than the rowid has a unique index too
    indexed: set[tuple[str, ...]] = set()
    for index, is_unique, partial in connection.execute(
            "SELECT name, \"unique\", partial FROM pragma_index_list(?)", (name,)).fetchall():
        covered = tuple(row[0] for row in connection.execute(
            "SELECT name FROM pragma_index_info(?) ORDER BY seqno", (index,)))
        if partial or None in covered:  # a partial or expression index covers no column fully
            continue
        (unique if is_unique else indexed).add(covered)
    return TableShape(name, kind, columns, frozenset(unique), frozenset(indexed), triggers)


def sqlite_affinity(declared: str | None) -> str:
    """The type SQLite stores a column's values as, by its rules for the declared type
    (https://sqlite.org/datatype3.html §3.1): INT and BIGINT hold what INTEGER holds."""
    name = (declared or "").upper()
    if "INT" in name:
        return "INTEGER"
    if any(word in name for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if not name or "BLOB" in name:
        return "BLOB"
    if any(word in name for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


@lru_cache(maxsize=8)
def expected_catalogue(statements: tuple[str, ...]) -> dict[str, TableShape]:
    """The catalogue `statements` (a new log's `CREATE …`) make in an empty database."""
    connection = sqlite3.connect(":memory:")
    try:
        for statement in statements:
            connection.execute(statement)
        return sqlite_catalogue(connection)
    finally:
        connection.close()
