"""What every endpoint of one app reads: its settings, pipeline factory, runner and metrics.

`create_app` builds one `ServerState` and keeps it on `app.state.server`; a handler asks for it
with a parameter typed `Server` (a FastAPI dependency), so the routers hold no state of their own
and one module-level router serves any number of apps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from imad.serve.factory import PipelineFactory
from imad.serve.metrics import ServerMetrics
from imad.serve.reload_board import ReloadBoard
from imad.serve.runner import PipelineRunner
from imad.serve.settings import ServeSettings


@dataclass(frozen=True)
class ServerState:
    """One app's parts; `started` (Unix seconds) dates the model cards, `limits` is /health's."""

    settings: ServeSettings
    runner: PipelineRunner
    metrics: ServerMetrics
    started: int
    limits: dict[str, Any]
    board: ReloadBoard | None = None
    """The run's reload board under --workers (`imad.serve.reload_board`); None otherwise."""

    @property
    def factory(self) -> PipelineFactory:
        """The pipeline factory of the router in service now (a hot reload replaces it)."""
        return self.runner.factory


def server_state(request: Request) -> ServerState:
    """The state of the app that received `request`."""
    return request.app.state.server


Server = Annotated[ServerState, Depends(server_state)]
"""The type of a handler parameter that receives its app's `ServerState`."""
