"""One writer per corpus file: an advisory lock on a sidecar `<file>.lock` (issue 14, item 9).

Two corpus builders on one file would each answer every question (the second does not see the
first's answers until it rereads the file) and write each record twice. `corpus_lock(path)`
takes `fcntl.flock(LOCK_EX | LOCK_NB)` on `<path>.lock`, writes the holder's pid into it, and
removes it on release. A second builder gets a `CorpusLockedError` at once naming the file and
the holder's pid — it never waits silently. The lock dies with its process (a SIGKILL frees it),
so a stale `.lock` file left by a crash never blocks a rerun.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from imad.errors import DatasetError


class CorpusLockedError(DatasetError):
    """Another process is writing this corpus file."""


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


@contextmanager
def corpus_lock(path: Path) -> Iterator[None]:
    """Hold the write lock of corpus file `path` for the duration of the block."""
    sidecar = lock_path(path)
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    while True:
        handle = sidecar.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise CorpusLockedError(
                f"corpus file {path} is being written by another process (pid {holder}, lock "
                f"{sidecar}); wait for it to finish or write to another folder") from None
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
