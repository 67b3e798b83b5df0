"""The files in which `imad serve --workers N` keeps its Prometheus values.

Under `--workers N` the parent sets `PROMETHEUS_MULTIPROC_DIR` before the workers start;
prometheus_client then keeps every value in files there and `/metrics` of any worker reports
the sum over all of them (`imad.serve.metrics`). The directory must hold only this run's files
(prometheus_client sums whatever it finds there), so `imad serve` makes a new one per run, or,
when PROMETHEUS_MULTIPROC_DIR names one, checks that it is a writable directory (a ConfigError
naming the variable otherwise) and empties it of an earlier run's files
(`prepare_multiprocess_dir`, logged as `metrics_dir_emptied`). The live gauges of a worker that
died without a clean exit are dropped before each collection (`forget_dead_processes`), so a
killed worker's in-flight count does not stay in the sum.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

from imad.errors import ConfigError

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
LEGACY_MULTIPROCESS_ENV = "prometheus_multiproc_dir"
"""The lower-case name prometheus_client still reads (deprecated) when the upper-case is unset."""
LIVE_GAUGE_FILE = re.compile(r"gauge_live\w+_(\d+)\.db")


def multiprocess_mode() -> bool:
    """True when the values live in files shared by several worker processes."""
    return bool(os.environ.get(MULTIPROCESS_ENV))


def prepare_multiprocess_dir(environ: Mapping[str, str] | None = None) -> tuple[Path, int] | None:
    """The multiprocess directory the environment names, checked and emptied of an earlier
    run's `*.db` files, with how many were removed; None when no variable is set. ConfigError
    naming the variable when it is empty, missing, not a directory or not writable."""
    environ = os.environ if environ is None else environ
    name = next((key for key in (MULTIPROCESS_ENV, LEGACY_MULTIPROCESS_ENV) if key in environ), None)
    if name is None:
        return None
    text = environ[name]
    path = Path(text)
    if not text.strip():
        raise ConfigError(name, "is empty; name a directory for the metrics of the worker "
                                "processes, or unset it (imad serve then makes one per run)")
    if not path.is_dir():
        what = "is a file" if path.exists() else "does not exist"
        raise ConfigError(name, f"{text!r} {what}; it must name a directory (create it first, "
                                "or unset the variable: imad serve then makes one per run)")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(name, f"{text!r} is not writable by this user")
    try:  # os.access says yes to root for /proc or /sys, where the workers' files then fail
        handle, probe = tempfile.mkstemp(dir=path, prefix=".imad-probe-")
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise ConfigError(name, f"{text!r} takes no new file ({error.strerror or error}); name "
                                "a writable directory, or unset it (imad serve then makes one "
                                "per run)") from None
    stale = sorted(path.glob("*.db"))
    try:
        for file in stale:
            file.unlink()
    except OSError as error:
        raise ConfigError(name, f"cannot remove the earlier run's {file.name} from {text!r}: "
                                f"{error.strerror or error}") from None
    return path, len(stale)


def forget_dead_processes(path: str | Path) -> None:
    """Remove the live-gauge files of processes that no longer run (a worker killed without
    a clean exit), as prometheus_client's `mark_process_dead` would at a clean exit."""
    for file in Path(path).glob("gauge_live*.db"):
        found = LIVE_GAUGE_FILE.fullmatch(file.name)
        if found is not None and not _running(int(found.group(1))):
            file.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
