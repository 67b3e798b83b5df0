"""`POST /v1/imad/admin/reload`: put another router checkpoint in service without a restart.

Behind the API key like /v1. The body is empty, or a JSON object `{"router": NAME|PATH}`
(at most `MAX_BODY_BYTES`; a shipped name such as `imad-router-v1.1`, or a checkpoint
directory as the server's `--router` takes it; default: the --router the server started with).
The checkpoint is loaded and validated in a thread, off the request path, and swapped in at
once (`imad.serve.reload.swap`); the answer is 200 with the router now serving (`router`: its
name, version and hash, as /health shows it), 400 for a bad body,
413 for an oversized one, 422 (`router_refused`, with the checkpoint's error) when it cannot
serve — the router in service keeps serving. `workers` lists each worker process (`pid`) and
the router hash it now serves. Under --workers the worker that takes the request reloads, the
others follow from the run's reload board, and the answer waits for them: 200 only when every
worker serves the new router; 503 `reload_incomplete` when one refused it (its checkpoint file
changed in between) or did not answer within 30 s, 409 `reload_superseded` when another reload
came first — each naming what every worker serves (`imad.serve.reload.board`,
`imad.serve.reload.acks`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request

from imad.errors import ServeError
from imad.serve.limits import read_body
from imad.serve.openai.strict_json import json_object_body
from imad.serve.reload.board import reload_every_worker
from imad.serve.routes.state import Server

MAX_BODY_BYTES = 8192
MAX_ROUTER_CHARS = 4096

router = APIRouter()


def router_spec(body: bytes) -> str | None:
    """The router a reload body names (None: the start-up one); ServeError 400 saying why not."""
    if not body.strip():
        return None
    payload = json_object_body(body, "the reload body", max_bytes=MAX_BODY_BYTES,
                               example='{"router": "imad-router-v2"}')
    unknown = sorted(set(payload) - {"router"})
    if unknown:
        raise ServeError(400, f"unknown reload field(s) {', '.join(map(repr, unknown))}; the only "
                              "field is 'router'", code="invalid_request", param=unknown[0])
    spec = payload.get("router")
    if spec is None:
        return None
    if not isinstance(spec, str):
        raise ServeError(400, f"'router' must be a string (a shipped name or a checkpoint "
                              f"directory), got {type(spec).__name__}", code="invalid_request",
                         param="router")
    if not spec.strip() or len(spec) > MAX_ROUTER_CHARS or "\x00" in spec:
        what = "is empty" if not spec.strip() else (
            f"is longer than {MAX_ROUTER_CHARS} characters" if len(spec) > MAX_ROUTER_CHARS
            else "holds a NUL character")
        raise ServeError(400, f"'router' {what}; name a shipped router or a checkpoint directory",
                         code="invalid_request", param="router")
    return spec


@router.post("/v1/imad/admin/reload")
async def reload_router(request: Request, server: Server) -> dict[str, Any]:
    spec = router_spec(await read_body(request, MAX_BODY_BYTES))
    routers = server.runner.routers
    acks = await asyncio.to_thread(reload_every_worker, routers, server.board, spec,
                                   "POST /v1/imad/admin/reload")
    identity = routers.current.identity
    return {"status": "reloaded",
            "router": {"name": identity.name, "version": identity.version, "hash": identity.hash},
            "workers": [{"pid": ack.pid, "router_hash": ack.router_hash} for ack in acks]}
