"""Processes of `imad serve` that end with the process that started them.

`imad serve --workers N` is a tree: uvicorn's supervisor, its worker processes, and each
worker's scoring processes (`imad.serve.scoring.processes`). All of them are started with
multiprocessing's "spawn", which hands the child one end of a pipe whose other end only its
parent holds: when the parent dies — even by SIGKILL, which runs no clean-up — the pipe
closes and the child sees it at once. `watch_parent` waits on that pipe in a daemon thread
(portable, and unlike Linux's parent-death signal it does not fire when merely the thread that
started the child ends), so no process of the tree outlives its parent and holds the port:

- a scoring process exits at once (it holds no request);
- a worker shuts down as on SIGTERM (it stops accepting, lets its requests finish within
  `--shutdown-timeout`), and is ended by `os._exit` if that takes `EXIT_GRACE_S` longer.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable

EXIT_GRACE_S = 5.0
"""How long past `--shutdown-timeout` an orphaned worker may take to shut down."""


def watch_parent(on_death: Callable[[], None]) -> bool:
    """Call `on_death` in a daemon thread once the parent process has ended. False (and no
    thread) when this process was not started by multiprocessing."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return False
    threading.Thread(target=_wait_for, args=(parent, on_death), name="imad-parent-watch",
                     daemon=True).start()
    return True


def exit_now() -> None:
    """End this process at once (a child with nothing to finish)."""
    os._exit(0)


def shut_down_within(grace_s: float) -> Callable[[], None]:
    """An `on_death` for a server process: SIGTERM to itself (uvicorn's graceful shutdown),
    then `os._exit` after `grace_s` if it is still running."""

    def shut_down() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        timer = threading.Timer(grace_s, os._exit, args=(1,))
        timer.daemon = True
        timer.start()

    return shut_down


def _wait_for(parent: multiprocessing.process.BaseProcess, on_death: Callable[[], None]) -> None:
    parent.join()  # returns once the parent's end of the pipe is closed: the parent is gone
    on_death()
