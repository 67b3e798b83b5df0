"""The decision-log flags that `imad serve` and `imad ask` share.

    --decision-log PATH|URL     one row per decision (`imad.decision_log`): a SQLite file, or a
                                postgresql:// URL a fleet of servers shares
    --log-text                  keep question and answer text (default: their SHA-256 only)
    --decision-log-max-rows N   keep only the newest N rows

`imad serve` reads them into its `ServeSettings` (whose table checks them); `imad ask` opens the
log with `decision_log_from_args`, which applies the same rules. The readers that fit on a log
(`imad calibrate --log`, with `--recalibrate`, `--target-trigger-rate` or `--certify`) select
its rows with `log_selection`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from imad.constraints import Integer, parse_text
from imad.decision_log.encode import MAX_COUNT
from imad.decision_log.url import database_location
from imad.decision_log.writer import DecisionLog
from imad.errors import ConfigError

if TYPE_CHECKING:
    from imad.decision_log.replica import Replica

MAX_ROWS_FLAG = "--decision-log-max-rows"


def add_decision_log_arguments(parser: argparse.ArgumentParser, *, serving: bool) -> None:
    shared = "shared by the workers; " if serving else ""
    parser.add_argument("--decision-log", default=None, metavar="PATH|URL",
                        help=f"record one row per decision in this SQLite file ({shared}"
                             "`imad report --log PATH` reads it), or in the PostgreSQL database of "
                             "a postgresql:// URL that every replica shares; default: no log")
    parser.add_argument("--log-text", action="store_true",
                        help="keep question and answer text in the decision log (default: their "
                             "SHA-256 only)")
    parser.add_argument(MAX_ROWS_FLAG, default=None, metavar="N",
                        help="keep only the newest N rows of the decision log (default: all)")


def max_rows_from_args(args: argparse.Namespace) -> int | None:
    """`--decision-log-max-rows` read by its row: an integer in [1, 10⁹], or None."""
    if args.decision_log_max_rows is None:
        return None
    return parse_text(args.decision_log_max_rows, Integer(1, MAX_COUNT), MAX_ROWS_FLAG)


def decision_log_from_args(args: argparse.Namespace) -> DecisionLog | None:
    """The log `--decision-log` asks for (None without it). `--log-text` or a row limit without
    a log is a `ConfigError`; a file that is not a decision log is refused here, before any
    LLM call."""
    max_rows = max_rows_from_args(args)
    if args.decision_log is None:
        for flag, given in (("--log-text", args.log_text), (MAX_ROWS_FLAG, max_rows is not None)):
            if given:
                raise ConfigError(flag, "applies to the decision log, which --decision-log PATH "
                                        "turns on: add it or drop this flag")
        return None
    if not args.decision_log.strip():  # `--decision-log "$UNSET"`
        raise ConfigError("--decision-log", "is empty; give the path of the log file")
    if database_location(args.decision_log, "--decision-log") is None:  # a database: checked on open
        _check_writable(args.decision_log)
    return DecisionLog(args.decision_log, log_text=args.log_text, max_rows=max_rows)


def _check_writable(path: str) -> None:
    """Open the log once for writing, so a place no log can be written (a missing folder,
    /proc) is an error before the one question's LLM call, not a row silently dropped (a
    server, which outlives a full disk, drops and counts rows instead)."""
    import sqlite3

    from imad.decision_log.store import open_store
    from imad.errors import DecisionLogError

    try:
        open_store(path).close()
    except sqlite3.Error as error:
        raise DecisionLogError(f"--decision-log {path}: cannot open it for writing ({error}); "
                               "give a path in an existing, writable folder") from None


def log_selection(args: argparse.Namespace) -> tuple[float | None, Replica | None] | None:
    """`--since` and `--replica` of `imad calibrate --log PATH|URL`, parsed; None without --log
    (then neither may be given, and --corpus may: a ConfigError names the flag otherwise)."""
    from imad.cli.time_flags import parse_since
    from imad.decision_log.replica import parse_replica

    if args.log is None:
        for flag, given in (("--since", args.since), ("--replica", args.replica)):
            if given is not None:
                raise ConfigError(flag, "selects decision-log rows: give --log PATH too")
        return None
    if args.corpus:
        raise ConfigError("--log", "fit on a decision log or on --corpus files, not both")
    return (None if args.since is None else parse_since(args.since)), parse_replica(args.replica)
