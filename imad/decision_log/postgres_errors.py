"""What a PostgreSQL failure means for the decision log, said without the password.

A driver error becomes a `DecisionLogDatabaseError` whose `kind` is the writer's drop reason:
"unreachable" (no connection: the server is down, restarting, refusing logins or full of
connections — the only kind a writer waits out), "unwritable" (the role lacks a right, the
database is read-only or its disk full), "busy" (a lock or a serialization conflict), "damaged"
(a table or column imad needs is gone) or "other". `SQLSTATE` classes decide; the message
keeps the server's words (which never echo a password) and redacts the URL's secrets anyway.
"""

from __future__ import annotations

import sqlite3

from imad.decision_log.redact import redact_text
from imad.decision_log.schema import error_kind
from imad.errors import DecisionLogDatabaseError

_KINDS = (
    ("08", "unreachable"), ("57P", "unreachable"), ("53300", "unreachable"), ("28", "unreachable"),
    ("3D000", "unreachable"), ("42501", "unwritable"), ("25006", "unwritable"),
    ("53", "unwritable"), ("40", "busy"), ("55P03", "busy"), ("42P01", "damaged"),
    ("42703", "damaged"),
)
"""SQLSTATE prefixes, most specific first: connection, operator intervention (shutdown), too
many connections, authentication, no such database; privilege, read-only, disk; transaction
rollback, lock; undefined table or column."""
_ADVICE = {
    "28": "check the user and password (the URL, PGUSER/PGPASSWORD or the password file)",
    "3D000": "create the database first (createdb), or name an existing one in the URL",
    "42501": "the role may not create or write the log's tables: grant it CREATE on the schema "
             "(or have an owner create them once) and INSERT, UPDATE, DELETE, SELECT on them",
    "unreachable": "check the host and port, and that PostgreSQL is running",
}


def kind_of(error: Exception) -> str:
    """The drop reason a driver error stands for (`_KINDS`)."""
    state = getattr(error, "sqlstate", None)
    if state is None:  # no server answer at all: a refused or timed-out connection, a pool timeout
        return "unreachable"
    return next((kind for prefix, kind in _KINDS if state.startswith(prefix)), "other")


def database_error(error: Exception, shown: str, url: str, *,
                   opening: bool = False) -> DecisionLogDatabaseError:
    """The typed, redacted error for a driver failure on the log at `shown` (`url` unredacted,
    only to find what to hide)."""
    kind = kind_of(error)
    state = getattr(error, "sqlstate", None) or ""
    advice = next((text for key, text in _ADVICE.items() if state.startswith(key)), None)
    if advice is None and kind == "unreachable":
        advice = _ADVICE["unreachable"]
    words = " ".join(str(error).split()) or type(error).__name__
    action = "cannot be opened" if opening else "failed"
    message = f"decision log {shown} {action}: {redact_text(words, url)}"
    return DecisionLogDatabaseError(message + (f"; {advice}" if advice else ""), kind)


def failure_kind(error: Exception) -> str:
    """The drop reason of any store failure: SQLite's (`error_kind`) or a database's `kind`."""
    if isinstance(error, sqlite3.Error):
        return error_kind(error)
    return getattr(error, "kind", "other")


def transient(error: DecisionLogDatabaseError) -> bool:
    """Whether waiting may cure it: the database could not be reached."""
    return error.kind == "unreachable"


STORE_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, DecisionLogDatabaseError)
"""What a store raises when the log's storage fails (the writer drops and counts the rows)."""
