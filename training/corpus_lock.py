"""One writer per corpus file: an advisory lock on a sidecar `<file>.lock` (issue 14, item 9).

Two corpus builders on one file would each answer every question (the second does not see the
first's answers until it rereads the file) and write each record twice. `corpus_lock(path)`
holds `imad.file_lock.held_lock` without waiting: a second builder gets a `CorpusLockedError`
at once naming the file and the holder's pid — it never waits silently. The lock dies with its
process (a SIGKILL frees it), so a stale `.lock` file left by a crash never blocks a rerun.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from imad.errors import DatasetError
from imad.file_lock import LockBusyError, held_lock, lock_path

__all__ = ["CorpusLockedError", "corpus_lock", "lock_path"]


class CorpusLockedError(DatasetError):
    """Another process is writing this corpus file."""


@contextmanager
def corpus_lock(path: Path) -> Iterator[None]:
    """Hold the write lock of corpus file `path` for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with held_lock(path, blocking=False):
            yield
    except LockBusyError as busy:
        raise CorpusLockedError(
            f"corpus file {path} is being written by another process (pid {busy.holder}, lock "
            f"{busy.sidecar}); wait for it to finish or write to another folder") from None
