"""`POST /v1/imad/feedback`: an outcome label for a served decision.

Guarded like every /v1 route. The body is `{"id": "<completion id>", "correct": true|false,
"source"?: "user"|"judge"|"gold", "debate_correct"?: true|false}` (`source` defaults to `user`),
at most `FEEDBACK_MAX_BYTES` (read with `imad.serve.limits.read_body`, which answers 413 past
that). The label is stored through the worker's `DecisionLog`, off the event loop (after every
row that worker recorded, so a label posted right after its response finds its row); a repeat
replaces the label and counts the change. Under `--workers N` the label may reach another worker
than the one that answered, whose writer records the row a few milliseconds after the response:
an unknown id is then tried again for up to `SIBLING_GRACE_S` before it is refused (with a log
in PostgreSQL, which another replica may still be writing, for longer:
`imad.decision_log.label_wait`). 400 names
what is wrong with the body, 404 an id the log does not hold, 503 a log that cannot be written.
The response is the stored label with its change count.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from imad.decision_log.label_wait import label_grace_s
from imad.decision_log.labels import Label, parse_label
from imad.decision_log.writer import DecisionLog
from imad.errors import DatasetError, DecisionLogError, ServeError, UnknownDecisionError
from imad.serve.limits import read_body
from imad.serve.openai.strict_json import json_object_body
from imad.serve.routes.state import Server

FEEDBACK_MAX_BYTES = 4096
"""Largest feedback body: an id of at most 256 characters and three small fields fit 16 times."""
SIBLING_GRACE_S = 1.0
"""Under --workers, how long an unknown id is tried again: a sibling worker's writer records a
row within milliseconds of its response, so past this the id is unknown."""
RETRY_INTERVAL_S = 0.05


def feedback_label(body: bytes) -> Label:
    """The label in a feedback body, or ServeError 400 saying what is wrong with it."""
    payload = json_object_body(body, "the feedback body")
    try:
        return parse_label(payload, default_source="user")
    except DatasetError as error:
        raise ServeError(400, f"invalid feedback: {error}", code="invalid_feedback",
                         param=_field_named(str(error))) from None


def store_feedback(log: DecisionLog | None, body: bytes, *, sibling_grace_s: float = 0.0) -> dict[str, Any]:
    """Parse and store one feedback body; the response body. Blocking: run it in a thread.
    `sibling_grace_s`: how long to try an unknown id again (`SIBLING_GRACE_S` under --workers,
    0 for one process, whose own rows are always written before its labels)."""
    label = feedback_label(body)
    if log is None:
        raise ServeError(404, "this server keeps no decision log, so it cannot take feedback; start "
                              "it with --decision-log PATH|URL", code="no_decision_log")
    try:
        changes = _label_when_recorded(log, label, sibling_grace_s)
    except UnknownDecisionError:
        raise ServeError(404, f"no decision with id {label.id!r} in this server's decision log",
                         code="unknown_id", param="id") from None
    except DecisionLogError as error:
        raise ServeError(503, f"the label was not stored: {error}", type="server_error",
                         code="decision_log_unavailable") from None
    return {"id": label.id, "correct": label.correct, "source": label.source,
            "debate_correct": label.debate_correct, "changes": changes}


def _label_when_recorded(log: DecisionLog, label: Label, grace_s: float) -> int:
    """`log.label(label)`, tried again every `RETRY_INTERVAL_S` while the id is unknown, for at
    most `grace_s` (then the `UnknownDecisionError` is raised)."""
    deadline = time.monotonic() + grace_s
    while True:
        try:
            return log.label(label)
        except UnknownDecisionError:
            if time.monotonic() >= deadline:
                raise
        time.sleep(RETRY_INTERVAL_S)


def _field_named(message: str) -> str | None:
    """The body field an error message is about (its first word), for the error's `param`."""
    first = message.split(" ", 1)[0]
    return first if first in ("id", "correct", "source", "debate_correct") else None


router = APIRouter()


@router.post("/v1/imad/feedback")
async def feedback(request: Request, server: Server) -> dict[str, Any]:
    body = await read_body(request, FEEDBACK_MAX_BYTES)
    grace_s = label_grace_s(server.decision_log, SIBLING_GRACE_S if server.settings.workers > 1 else 0.0)
    return await run_in_threadpool(store_feedback, server.decision_log, body, sibling_grace_s=grace_s)
