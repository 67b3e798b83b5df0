"""Every route needs the API key unless its path is on the public list.

`create_app` includes each router behind `require_bearer` (a router-level dependency) unless
every path of that router is public, so a new route or router is guarded without anyone
remembering to. Public: `/health` (load balancers probe it without a key) and, under
`--metrics-public`, `/metrics`. FastAPI's /docs, /redoc and /openapi.json are switched off in
`create_app`: they would describe the API to anyone who can reach the port.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import fastapi.routing
from fastapi import Request
from starlette.routing import BaseRoute

from imad.serve.auth import check_bearer
from imad.serve.settings import ServeSettings

ALWAYS_PUBLIC = frozenset({"/health"})
METRICS_PATH = "/metrics"


def public_paths(settings: ServeSettings) -> frozenset[str]:
    """The paths answered without the API key."""
    return ALWAYS_PUBLIC | ({METRICS_PATH} if settings.metrics_public else frozenset())


def require_bearer(request: Request) -> None:
    """The API key check as a dependency: ServeError 401 unless the request carries the key."""
    check_bearer(request.headers.get("authorization"), request.app.state.server.settings.api_key)


def served_routes(routes: Iterable[BaseRoute]) -> list[Any]:
    """`app.routes` as served, one entry per path operation. Recent FastAPI keeps an included
    router as one lazy entry (`iter_route_contexts` resolves it, with the include's
    dependencies); older FastAPI copied each route into `app.routes`."""
    resolve = getattr(fastapi.routing, "iter_route_contexts", None)
    return list(routes) if resolve is None else list(resolve(list(routes)))


def is_guarded(route: Any) -> bool:
    """Whether `route` runs `require_bearer` before its handler (only a FastAPI route can)."""
    dependant = getattr(route, "dependant", None)
    return dependant is not None and any(
        dependency.call is require_bearer for dependency in dependant.dependencies)


def unguarded_routes(routes: Iterable[BaseRoute], public: frozenset[str]) -> list[str]:
    """The paths of `routes` (an app's) that are neither guarded nor public: each is a hole."""
    paths = [(getattr(route, "path", None) or repr(route), route) for route in served_routes(routes)]
    return sorted(path for path, route in paths if not is_guarded(route) and path not in public)
