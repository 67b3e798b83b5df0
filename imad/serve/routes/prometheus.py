"""`GET /metrics`: Prometheus metrics (`imad.serve.metrics`); behind the key unless
`--metrics-public` puts the path on the public list."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from imad.serve.routes.guard import METRICS_PATH
from imad.serve.routes.state import Server
from imad.serve.routes.stats import served_certificate

router = APIRouter()


@router.get(METRICS_PATH)
async def prometheus_metrics(server: Server) -> Response:
    server.runner.report_load()
    server.metrics.observe_certificate(served_certificate(server))
    body, content_type = server.metrics.render()
    return Response(body, media_type=content_type)
