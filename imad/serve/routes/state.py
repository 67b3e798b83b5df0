"""What every endpoint of one app reads: its settings, pipeline factory, runner, metrics and
the serving object of its chat completions.

`create_app` builds one `ServerState` and keeps it on `app.state.server`; a handler asks for it
with a parameter typed `Server` (a FastAPI dependency), so the routers hold no state of their own
and one module-level router serves any number of apps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from imad.decision_log.answer_row import RouterIdentity
from imad.decision_log.writer import DecisionLog
from imad.serve.chat_serving import ChatServing
from imad.serve.factory import PipelineFactory
from imad.serve.metrics import ServerMetrics
from imad.serve.reload.board import ReloadBoard
from imad.serve.runner import PipelineRunner
from imad.serve.settings import ServeSettings
from imad.serve.shadow_debates import ShadowDebates


@dataclass(frozen=True)
class ServerState:
    """One app's parts; `started` (Unix seconds) dates the model cards, `limits` is /health's,
    `decision_log` the worker's decision log."""

    settings: ServeSettings
    runner: PipelineRunner
    metrics: ServerMetrics
    started: int
    limits: dict[str, Any]
    chat: ChatServing
    """What answers, logs, counts and records each chat completion (`imad.serve.chat_serving`)."""
    decision_log: DecisionLog | None = None
    """This process's handle on `--decision-log` (None without one)."""
    board: ReloadBoard | None = None
    """The run's reload board under --workers (`imad.serve.reload.board`); None otherwise."""
    shadow_debates: ShadowDebates | None = None
    """`--shadow --shadow-debate-rate R`: the sampled answers' background debates."""

    @property
    def factory(self) -> PipelineFactory:
        """The pipeline factory of the router in service now (a hot reload replaces it)."""
        return self.runner.factory

    @property
    def router_identity(self) -> RouterIdentity:
        """The name, version and content hash of the router in service now; a request's own
        decision names the router that scored it (`PipelineRunner.answer`)."""
        return self.runner.routers.current.identity


def server_state(request: Request) -> ServerState:
    """The state of the app that received `request`."""
    return request.app.state.server


Server = Annotated[ServerState, Depends(server_state)]
"""The type of a handler parameter that receives its app's `ServerState`."""
