"""Where a decision log lives: a SQLite file (one machine) or a PostgreSQL database (the fleet).

`--decision-log` and every reader's `--log` take either a path (SQLite, the default) or a
`postgresql://` URL (also `postgres://`). `parse_location` tells them apart and checks a URL's
form before anything connects (`imad.decision_log.location` opens the store it names, so the
writer and the readers never branch on the kind themselves). Any other `scheme://` is refused
rather than read as a file name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imad.decision_log.redact import redact_url
from imad.errors import ConfigError, MissingDependencyError

DATABASE_SCHEMES = ("postgresql", "postgres")
_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):(//)?")
POSTGRES_EXTRA = "pip install 'imad[postgres]'"


@dataclass(frozen=True)
class LogLocation:
    """A parsed `--decision-log`/`--log` value: a SQLite path, or a database URL."""

    given: str = field(repr=False)
    """The value as given (a URL may hold a password: show `shown`, never this)."""
    database: bool

    @property
    def shown(self) -> str:
        """The location as messages name it (a URL with its password hidden)."""
        return redact_url(self.given) if self.database else self.given

    @property
    def path(self) -> Path | str:
        """What the log's `path` attribute holds: the file's `Path`, or the redacted URL."""
        return self.shown if self.database else Path(self.given)


def is_database_url(value: object) -> bool:
    """Whether a `--decision-log`/`--log` value names a database (a postgresql:// URL)."""
    if not isinstance(value, str):
        return False
    found = _URL.match(value)
    return found is not None and found.group(1).lower() in DATABASE_SCHEMES


def database_location(value: object, flag: str) -> LogLocation | None:
    """The database a `scheme://` value names (`ConfigError` for another scheme than
    PostgreSQL's, or a malformed URL); None for anything else, which is a file path."""
    if isinstance(value, str) and (is_database_url(value) or "://" in value[:40]):
        location = parse_location(value, flag)
        return location if location.database else None
    return None


def parse_location(value: str | os.PathLike[str], flag: str = "--decision-log") -> LogLocation:
    """The location a flag's value names; `ConfigError` naming `flag` for an empty value, a URL
    of another scheme, or a PostgreSQL URL libpq cannot read (the message is redacted)."""
    text = os.fspath(value)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(flag, "is empty; give the path of a SQLite file or a postgresql:// URL")
    found = _URL.match(text)
    if found is None or (found.group(2) is None and found.group(1).lower() not in DATABASE_SCHEMES):
        return LogLocation(text, database=False)  # a path, even one holding a colon (C:, a:b)
    if found.group(1).lower() not in DATABASE_SCHEMES:
        raise ConfigError(flag, f"{redact_url(text)!r} is a {found.group(1)}:// URL; a decision "
                          "log is a SQLite file path or a postgresql:// URL")
    if found.group(2) is None:
        raise ConfigError(flag, f"{redact_url(text)!r} is not a URL: write postgresql://"
                          "[user[:password]@][host][:port][/database][?key=value…]")
    check_url(text, flag)
    return LogLocation(text, database=True)


def check_url(url: str, flag: str) -> None:
    """`ConfigError` for a URL libpq would refuse (a bad port, an unknown parameter, bad
    escapes), before a connection is tried."""
    conninfo = _conninfo()
    try:
        parameters = conninfo.conninfo_to_dict(url)
    except Exception as error:  # psycopg.ProgrammingError: libpq's parser
        from imad.decision_log.redact import redact_text

        raise ConfigError(flag, f"{redact_url(url)!r} is not a PostgreSQL URL libpq can read "
                          f"({redact_text(str(error).strip(), url)})") from None
    port = str(parameters.get("port", "5432"))
    if not all(part.isdigit() and 0 < int(part) < 65536 for part in port.split(",")):
        raise ConfigError(flag, f"{redact_url(url)!r}: port {port!r} is not a number in [1, 65535]")


def _conninfo() -> Any:
    try:
        from psycopg import conninfo
    except ImportError as error:
        raise MissingDependencyError("psycopg", POSTGRES_EXTRA,
                                     "a decision log in PostgreSQL") from error
    return conninfo
