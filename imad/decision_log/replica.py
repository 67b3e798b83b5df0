"""Which replica wrote a row: the `host` and `process` columns, and the `--replica` filter.

A fleet's servers share one log; each row names the machine and the process that wrote it.
`--replica HOST` keeps one machine's rows (every process on it), `--replica HOST:PID` one
process's. Rows of an older imad name neither and match no filter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from imad.errors import ConfigError

REPLICA_COLUMNS = ("host", "process")
REPLICA_HELP = "only the rows one replica wrote: HOST (every process on it) or HOST:PID"


@dataclass(frozen=True)
class Replica:
    """A `--replica` filter: a host name and, optionally, one process id on it."""

    host: str
    process: int | None = None

    def matches(self, row: dict[str, Any]) -> bool:
        return row.get("host") == self.host and (self.process is None
                                                 or row.get("process") == self.process)

    def __str__(self) -> str:
        return self.host if self.process is None else f"{self.host}:{self.process}"


def parse_replica(text: str | None, flag: str = "--replica") -> Replica | None:
    """`HOST` or `HOST:PID` as a `Replica` (None for None); `ConfigError` naming `flag` otherwise."""
    if text is None:
        return None
    host, colon, process = text.strip().rpartition(":") if ":" in text else (text.strip(), "", "")
    if not host or any(character.isspace() for character in host):
        raise ConfigError(flag, f"{text!r} is not HOST or HOST:PID (a host name without spaces)")
    if colon and not (process.isdigit() and 0 < int(process) < 2**31):
        raise ConfigError(flag, f"{text!r}: the process id {process!r} is not a positive integer")
    return Replica(host, int(process) if colon else None)


def of_replica(rows: Iterable[dict[str, Any]], replica: Replica | None) -> Iterator[dict[str, Any]]:
    """The rows `replica` wrote (all of them without a filter)."""
    return iter(rows) if replica is None else (row for row in rows if replica.matches(row))
