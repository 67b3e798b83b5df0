"""`GET /health`: liveness, load and limits for load balancers; public (`guard.ALWAYS_PUBLIC`).

It shows both concurrency limits (the server's and the upstream client's) and the scoring
processes, but nothing about the router: that is `/v1/imad/stats`, behind the key.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from imad import __version__
from imad.serve.routes.state import Server

router = APIRouter()


@router.get("/health")
async def health(server: Server) -> dict[str, Any]:
    runner = server.runner
    return {"status": "ok", "version": __version__, "upstream_model": server.factory.model.model_id,
            "in_flight": runner.in_flight, "waiting": runner.limiter.waiting, **server.limits}
