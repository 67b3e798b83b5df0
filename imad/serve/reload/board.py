"""How every process of one `imad serve` learns of a reload: SIGHUP, and the run's reload board.

One process (`imad serve` without --workers): SIGHUP reloads the router in service (the last
reload's, else --router) from its path, in a thread (`install_sighup`); `POST
/v1/imad/admin/reload` reloads in a thread of its own.

`--workers N`: uvicorn's supervisor answers SIGHUP by restarting every worker (uvicorn 0.55),
which would lose the trigger budgets and go back to the start-up router, so `imad serve` runs it
as `ReloadingSupervisor` (`imad.serve.processes.server`), whose SIGHUP instead writes a record on the
run's reload board: a small JSON file `{"generation", "router", "pid"}` in a temporary directory
of the run, replaced atomically under a file lock. Every worker follows the board (`follow`: a
thread that stats the file every `POLL_S` seconds) and reloads on each newer record it did not
write itself. A worker that receives `POST /v1/imad/admin/reload` (or a SIGHUP of its own) loads
and validates the router itself, answers, and writes the record; so the request's answer says
whether the router can serve, and its siblings serve it at most `POLL_S` plus one load later.
A worker uvicorn restarts (one that died) follows the board from its first record on, so it
serves the router of the latest reload too.

The record also carries the content hash of the router the first worker loaded, and each
worker answers every record it follows in an ack file beside the board
(`imad.serve.reload.acks`): a sibling whose load gives another hash (the file changed in
between) refuses it and keeps its router, and the worker that took the POST waits for the
siblings' answers, so its 200 means every worker serves the new router (otherwise 503
`reload_incomplete` or 409 `reload_superseded`, naming each worker's router). SIGHUP to the
supervisor writes a record without a hash and waits for nobody.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
from pathlib import Path
from typing import Any

from imad.atomic_file import write_atomic
from imad.errors import ServeError
from imad.file_lock import held_lock
from imad.jsonio import loads_untrusted
from imad.serve.logs import log_event
from imad.serve.reload.acks import REFUSED, RELOADED, WorkerAck, await_siblings, fleet_agrees, write_ack
from imad.serve.reload.swap import ServingRouters

POLL_S = 0.2
BOARD_FILE = "reload.json"


class ReloadBoard:
    """The run's record of its latest reload (module docstring)."""

    def __init__(self, path: Path, workers: int = 1) -> None:
        """`workers`: how many worker processes follow the board (the server's --workers)."""
        self.path = path
        self.workers = workers
        self._acked = 0  # the newest generation this process answered in its ack file
        self._ack_lock = threading.Lock()

    def publish(self, spec: str | None, router_hash: str | None = None) -> int:
        """Record a reload of `spec` made by this process (`router_hash`: the content hash it
        loaded, which the others must load too; None from the supervisor); its generation."""
        with held_lock(self.path, blocking=True):
            generation = (self.read() or {}).get("generation", 0) + 1
            record = {"generation": generation, "router": spec, "hash": router_hash,
                      "pid": os.getpid()}
            write_atomic(self.path, json.dumps(record).encode())
        return generation

    def acknowledge(self, generation: int, routers: ServingRouters, error: str | None = None) -> WorkerAck:
        """Write this worker's answer to record `generation`: the router it serves now, and
        why it refused the record's router when `error` is given. Nothing is written when this
        worker has taken a later record meanwhile (a reload of its own while it followed this
        one): that record's answer stands, so the worker waiting on this one sees a later
        generation (409 `reload_superseded`), never this record paired with the later router's
        hash (which read as a disagreement, 503), and an ack file never goes back a generation."""
        ack = WorkerAck(os.getpid(), generation, RELOADED if error is None else REFUSED,
                        routers.current.identity.hash, error)
        with self._ack_lock:
            if generation < max(self._acked, routers.board_generation):
                return ack
            self._acked = generation
            try:
                write_ack(self.path.parent, ack)
            except OSError as problem:  # the waiting worker then reports this one as silent
                log_event("reload_ack_not_written", level=logging.WARNING, error=str(problem))
        return ack

    def read(self) -> dict[str, Any] | None:
        """The latest record, or None before the first reload (or when it cannot be read)."""
        try:
            record = loads_untrusted(self.path.read_bytes())
        except (OSError, ValueError):  # UntrustedJSONError is a ValueError
            return None
        return record if isinstance(record, dict) and isinstance(record.get("generation"), int) else None


def follow(board: ReloadBoard, routers: ServingRouters, stop: threading.Event) -> threading.Thread:
    """Start a thread that reloads `routers` on every newer record of `board` written by
    another process, until `stop` is set."""

    def run() -> None:
        seen: tuple[int, int] | None = None
        while not stop.wait(POLL_S):
            try:
                stat = board.path.stat()
            except OSError:
                continue
            if (stat.st_mtime_ns, stat.st_ino) == seen:
                continue
            seen = (stat.st_mtime_ns, stat.st_ino)
            record = board.read()
            if record is None or record["generation"] <= routers.board_generation:
                continue
            if record.get("pid") == os.getpid():
                routers.board_generation = max(routers.board_generation, record["generation"])
                continue
            expected = record.get("hash") if isinstance(record.get("hash"), str) else None
            try:
                routers.reload(record.get("router"), why="reload board",
                               board_generation=record["generation"], expected_hash=expected)
            except ServeError as error:  # logged by `reload`; the router in service keeps serving
                board.acknowledge(record["generation"], routers, error.message)
            else:
                board.acknowledge(record["generation"], routers)

    thread = threading.Thread(target=run, name="imad-reload-board", daemon=True)
    thread.start()
    return thread


def reload_here(routers: ServingRouters, board: ReloadBoard | None, spec: str | None,
                why: str) -> WorkerAck:
    """Reload in this process and, under --workers, record it for the others (blocks); this
    worker's answer. ServeError 422 when the checkpoint cannot serve."""
    routers.reload(spec, why=why, publish=None if board is None else board.publish)
    if board is None:
        return WorkerAck(os.getpid(), max(routers.board_generation, 1), RELOADED,
                         routers.current.identity.hash)
    return board.acknowledge(routers.board_generation, routers)


def reload_every_worker(routers: ServingRouters, board: ReloadBoard | None, spec: str | None,
                        why: str) -> list[WorkerAck]:
    """`reload_here`, then under --workers wait for the other workers to follow: every
    worker's answer, this one first, when all serve the new router; ServeError 503/409 naming
    each worker's router when they do not (`imad.serve.reload.acks.fleet_agrees`)."""
    mine = reload_here(routers, board, spec, why)
    if board is None or board.workers <= 1:
        return [mine]
    siblings = await_siblings(board.path.parent, mine.generation, board.workers - 1)
    return fleet_agrees(mine, siblings, board.workers - 1)


def install_sighup(routers: ServingRouters, board: ReloadBoard | None) -> None:
    """SIGHUP reloads the router in service from its path — the last reload's, not the start-up
    one — in a thread (call from the main thread). A refusal is one `router_reload_refused` log
    line; the router in service keeps serving."""

    def reload_in_thread() -> None:
        with contextlib.suppress(ServeError):  # logged by `reload`
            reload_here(routers, board, routers.served_spec, "SIGHUP")

    signal.signal(signal.SIGHUP, lambda *_: threading.Thread(
        target=reload_in_thread, name="imad-reload-sighup", daemon=True).start())
