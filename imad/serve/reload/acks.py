"""Whether every worker of `imad serve --workers N` took a reload: the workers' answers.

A reload through `POST /v1/imad/admin/reload` under --workers is made by the worker that takes
the request and then followed by the others from the run's reload board
(`imad.serve.reload.board`). So that the request's answer can say "every worker now serves this
router" rather than "this worker does", each worker writes its answer to every board record it
follows — an ack file `ack-<pid>.json` beside the board: the record's generation, and the router
it serves afterwards or why it refused — and the worker that took the request waits (at most
`SIBLING_WAIT_S`) until N - 1 live siblings have answered that generation or a later one.

The fleet agrees when every sibling reloaded to the router hash of the record. Otherwise the
request is answered with the disagreement (`reload_incomplete`: a sibling refused the
checkpoint — say, the file changed after the first worker loaded it, which the record's hash
reveals — or did not answer in time; `reload_superseded`: another reload came after this one).
An ack file that cannot be read, is not a JSON object of the expected fields, or names a dead
process is passed over: it is a temporary file of this run, never a user's input.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imad.atomic_file import write_atomic
from imad.errors import ServeError
from imad.jsonio import loads_untrusted

ACK_PREFIX = "ack-"
SIBLING_WAIT_S = 30.0
"""How long the worker that took a reload request waits for its siblings' answers."""
POLL_S = 0.05
RELOADED, REFUSED = "reloaded", "refused"


@dataclass(frozen=True)
class WorkerAck:
    """One worker's answer to the reload board's record `generation`."""

    pid: int
    generation: int
    result: str
    """`RELOADED` (it serves the record's router now) or `REFUSED` (it kept its router)."""
    router_hash: str
    """The content hash of the router the worker serves after its answer."""
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "generation": self.generation, "result": self.result,
                "router_hash": self.router_hash, "error": self.error}


def write_ack(directory: Path, ack: WorkerAck) -> None:
    """Replace this worker's ack file in `directory` (all or nothing)."""
    write_atomic(directory / f"{ACK_PREFIX}{ack.pid}.json", json.dumps(ack.to_dict()).encode())


def parse_ack(data: bytes) -> WorkerAck | None:
    """The ack in `data`, or None when it is not one (damaged, foreign, half-typed)."""
    try:
        value = loads_untrusted(data)
    except ValueError:  # UntrustedJSONError is a ValueError
        return None
    if not isinstance(value, dict):
        return None
    pid, generation, result = value.get("pid"), value.get("generation"), value.get("result")
    router_hash, error = value.get("router_hash"), value.get("error")
    if not all(isinstance(number, int) and not isinstance(number, bool) and number > 0
               for number in (pid, generation)):
        return None
    if result not in (RELOADED, REFUSED) or not isinstance(router_hash, str) or not router_hash:
        return None
    if error is not None and not isinstance(error, str):
        return None
    return WorkerAck(pid, generation, result, router_hash, error)


def live_acks(directory: Path) -> dict[int, WorkerAck]:
    """Each live process's latest ack in `directory`, by pid."""
    acks: dict[int, WorkerAck] = {}
    for path in directory.glob(f"{ACK_PREFIX}*.json"):
        try:
            ack = parse_ack(path.read_bytes())
        except OSError:
            continue
        if ack is not None and path.name == f"{ACK_PREFIX}{ack.pid}.json" and is_alive(ack.pid):
            acks[ack.pid] = ack
    return acks


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    except (OSError, OverflowError):
        return False
    return True


def await_siblings(directory: Path, generation: int, siblings: int, *,
                   timeout_s: float | None = None) -> dict[int, WorkerAck]:
    """The other live workers' acks once `siblings` of them answered `generation` or a later
    record, or whatever had answered when `timeout_s` (default `SIBLING_WAIT_S`) ran out."""
    deadline = time.monotonic() + (SIBLING_WAIT_S if timeout_s is None else timeout_s)
    while True:
        answered = {pid: ack for pid, ack in live_acks(directory).items()
                    if pid != os.getpid() and ack.generation >= generation}
        if len(answered) >= siblings or time.monotonic() >= deadline:
            return answered
        time.sleep(POLL_S)


def fleet_agrees(mine: WorkerAck, siblings: dict[int, WorkerAck], expected: int, *,
                 waited_s: float | None = None) -> list[WorkerAck]:
    """Every worker's ack, this one first, when all `expected` siblings reloaded to this
    worker's router for its record; otherwise ServeError 409 (a later reload came) or 503
    (a sibling refused or did not answer) naming each worker's state."""
    later = [ack for ack in siblings.values() if ack.generation > mine.generation]
    if later:
        raise ServeError(409, f"another reload (board record {max(ack.generation for ack in later)}) "
                              f"came after this one (record {mine.generation}); the workers follow "
                              f"the latest: {describe([mine, *siblings.values()])}",
                         type="server_error", code="reload_superseded")
    disagree = [ack for ack in siblings.values()
                if ack.result != RELOADED or ack.router_hash != mine.router_hash]
    missing = expected - len(siblings)
    if disagree or missing > 0:
        waited = SIBLING_WAIT_S if waited_s is None else waited_s
        silent = (f"; {missing} more worker(s) did not answer within {waited:g} s"
                  if missing > 0 else "")
        raise ServeError(503, f"the reload took on this worker but not on every worker, so they "
                              f"now serve different routers: {describe([mine, *siblings.values()])}"
                              f"{silent}; reload again, or restart the server",
                         type="server_error", code="reload_incomplete")
    return [mine, *sorted(siblings.values(), key=lambda ack: ack.pid)]


def describe(acks: list[WorkerAck]) -> str:
    """'worker 12 serves 3fa2c1d0e9ab; worker 13 refused (…), serves 77c0…' for an error."""
    parts = []
    for ack in acks:
        refused = f"refused ({ack.error}), " if ack.result == REFUSED else ""
        parts.append(f"worker {ack.pid} {refused}serves {ack.router_hash[:12]}")
    return "; ".join(parts)
