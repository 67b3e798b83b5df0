"""`POST /v1/imad/feedback`: an outcome label for a served decision (issue 32 item 3).

Guarded like every /v1 route. The body is read with the feedback limit (413 past
`FEEDBACK_MAX_BYTES`) and stored through this worker's decision log off the event loop; the
rules (400, 404, 503, and the wait for a row another worker or replica is still writing:
`imad.decision_log.label_wait`) are `imad.serve.feedback`'s.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from imad.decision_log.label_wait import label_grace_s
from imad.serve.feedback import FEEDBACK_MAX_BYTES, SIBLING_GRACE_S, store_feedback
from imad.serve.limits import read_body
from imad.serve.routes.state import Server

router = APIRouter()


@router.post("/v1/imad/feedback")
async def feedback(request: Request, server: Server) -> dict[str, Any]:
    body = await read_body(request, FEEDBACK_MAX_BYTES)
    grace_s = label_grace_s(server.decision_log, SIBLING_GRACE_S if server.settings.workers > 1 else 0.0)
    return await run_in_threadpool(store_feedback, server.decision_log, body, sibling_grace_s=grace_s)
