"""An advisory lock on a sidecar `<file>.lock`, for files that several processes update.

`held_lock(path)` takes `fcntl.flock(LOCK_EX)` on `<path>.lock`, writes the holder's pid into it
and removes it on release. The kernel releases a flock when its process dies (a SIGKILL too), so
a `.lock` file left by a crash never blocks the next run. With `blocking=False` a busy lock
raises `LockBusyError` at once (the corpus builder refuses a second writer); with
`blocking=True` the caller waits its turn (concurrent `imad ask --budget-state` runs queue for
the few milliseconds of read → observe → write).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class LockBusyError(Exception):
    """Another live process holds the lock (non-blocking mode)."""

    def __init__(self, sidecar: Path, holder: str) -> None:
        super().__init__(f"{sidecar} is held by pid {holder}")
        self.sidecar = sidecar
        self.holder = holder


def lock_path(path: Path) -> Path:
    """The sidecar lock file of `path`."""
    return path.with_name(path.name + ".lock")


@contextmanager
def held_lock(path: Path, *, blocking: bool) -> Iterator[None]:
    """Hold the advisory lock of `path` for the duration of the block (module docstring)."""
    sidecar = lock_path(path)
    while True:
        handle = sidecar.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise LockBusyError(sidecar, holder) from None
        # The holder before us may have removed the file between our open and our lock: then
        # we hold a lock on a deleted file, and must lock the file that is there now.
        try:
            if os.path.samestat(os.fstat(handle.fileno()), sidecar.stat()):
                break
        except FileNotFoundError:
            pass
        handle.close()
    try:
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        sidecar.unlink(missing_ok=True)
        handle.close()
