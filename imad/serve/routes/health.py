"""`GET /health` (and `HEAD /health`, its headers without the body): liveness, load and limits
for load balancers; public (`guard.ALWAYS_PUBLIC`).

It shows both concurrency limits (the server's and the upstream client's), the scoring
processes, and which router serves (name, version, content hash: a load balancer can see a hot
reload reach every worker; `worker_pid` tells the workers of `--workers N` apart). More about
the router is in `/v1/imad/stats`, behind the key.
"""

from __future__ import annotations

import os
from typing import Any

from fastapi import APIRouter

from imad import __version__
from imad.decide.certify.watch import certificate_summary
from imad.serve.routes.state import Server

router = APIRouter()


@router.api_route("/health", methods=["GET", "HEAD"])  # HEAD: the same, no body
async def health(server: Server) -> dict[str, Any]:
    runner = server.runner
    identity = runner.routers.current.identity
    return {"status": "ok", "version": __version__, "upstream_model": server.factory.model.model_id,
            "router": {"name": identity.name, "version": identity.version, "hash": identity.hash},
            "certificate": certificate_summary(runner.routers.current.factory.router.config.record
                                               .certificate),
            "worker_pid": os.getpid(),
            "in_flight": runner.in_flight, "waiting": runner.limiter.waiting, **server.limits}
