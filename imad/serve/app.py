"""The OpenAI-compatible routing server as an ASGI app (FastAPI): `create_app(settings, factory)`.

`create_app` starts the pipeline runner, then assembles the endpoint routers of
`imad.serve.routes` (chat completions, models, `/v1/imad/stats` and `/v1/imad/feedback`,
`/metrics`, `/health`), each
behind the API key unless its paths are public (`imad.serve.routes.guard`: `/health`, and
`/metrics` under `--metrics-public`). FastAPI's /docs, /redoc and /openapi.json are off.

Every error has OpenAI's shape `{"error": {"message", "type", "param", "code"}}`
(`imad.serve.openai.error_responses`): 400 malformed body, invalid field or empty question; 401 missing
or wrong key; 404 unknown model or path; 413 body, question or prompt (counted in the model's
tokens) too large; 429 the queue for the slots is full or the wait passed --queue-timeout (with
Retry-After); 502 the upstream model server failed or gave nothing usable; 504 upstream or
pipeline timeout; 500 a bug (logged). Responses, headers and SSE events are strict JSON: a
non-finite number is written as null, never as NaN or Infinity.

A client that disconnects — while sending its body or while its pipeline runs — is logged as one
`client_disconnected` line (status 499, no traceback), and its pipeline is cancelled at its next
LLM call so its slot frees (`imad.serve.runner`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI

from imad import __version__
from imad.decision_log.writer import DecisionLog
from imad.serve.chat_serving import ChatServing
from imad.serve.factory import PipelineFactory
from imad.serve.logs import log_event
from imad.serve.metrics import ServerMetrics
from imad.serve.openai.error_responses import install_error_handlers
from imad.serve.reload.board import ReloadBoard, follow
from imad.serve.routes import ROUTERS
from imad.serve.routes.guard import public_paths, require_bearer
from imad.serve.routes.state import ServerState
from imad.serve.runner import PipelineRunner
from imad.serve.settings import ServeSettings
from imad.serve.shadow_debates import shadow_debates
from imad.serve.startup_clock import StartupClock
from imad.serve.upstream import upstream_concurrency


def create_app(settings: ServeSettings, factory: PipelineFactory, *, router_spec: str | None = None,
               board: ReloadBoard | None = None, clock: StartupClock | None = None) -> FastAPI:
    """The routing server's app. Prepares the factory now, so bad config fails before serving.
    `router_spec`: the --router a reload without a body loads; `board`: the run's reload board
    under --workers, followed by a thread while the app runs (`imad.serve.reload.board`);
    `clock`: the start-up so far (`server_ready` reports its phases; default: from this call)."""
    clock = StartupClock() if clock is None else clock
    metrics = ServerMetrics()
    decision_log = open_decision_log(settings, metrics)  # a file that is not a log ends here
    factory.shadow = settings.shadow  # a reload's factory is a copy: it keeps this
    runner = PipelineRunner(factory, settings, metrics, router_spec=router_spec)  # its scoring
    # processes warm up meanwhile
    try:
        factory.prepare(settings.ood_policy)
        clock.lap("feature_extractor")
        runner.scorer.wait_ready()
        clock.lap("scoring_processes")  # what their warm-up took beyond the laps before
    except BaseException:
        runner.close()
        if decision_log is not None:
            decision_log.close()
        raise
    limits = {"max_concurrency": settings.max_concurrency,
              "upstream_max_concurrency": upstream_concurrency(factory.model),
              "max_queue": settings.queue_limit, "queue_timeout_s": settings.queue_timeout_s,
              "scoring_processes": runner.scoring_processes}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        log_event("server_ready", upstream_model=factory.model.model_id, router=factory.router.name,
                  default_backend=settings.default_backend, default_tau=settings.default_tau,
                  shadow=settings.shadow, shadow_debate_rate=settings.shadow_debate_rate,
                  **limits, workers=settings.workers, auth=settings.api_key is not None,
                  router_hash=runner.routers.current.identity.hash, **clock.summary())
        stop = threading.Event()
        if board is not None:
            follow(board, runner.routers, stop)
        yield
        stop.set()
        runner.close()
        if shadow is not None:  # within --shutdown-timeout; what is left is abandoned and counted
            shadow.close(settings.shutdown_timeout_s)
        if decision_log is not None:
            decision_log.close()  # flushes the rows still queued
        log_event("server_stopped")

    shadow = shadow_debates(settings, lambda: runner.factory, metrics, decision_log)
    app = FastAPI(title="imad routing server", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url=None)
    chat = ChatServing(settings, runner, metrics, decision_log, shadow)
    app.state.server = ServerState(settings, runner, metrics, int(time.time()), limits, chat,
                                   decision_log, board, shadow_debates=shadow)
    app.state.runner = runner
    public = public_paths(settings)
    install_error_handlers(app, check_key=lambda request: None if request.url.path in public
                           else require_bearer(request))
    for router in ROUTERS:
        if {route.path for route in router.routes} <= public:
            app.include_router(router)
        else:  # a router with any non-public path is guarded whole: a mistake fails closed
            app.include_router(router, dependencies=[Depends(require_bearer)])
    return app


def open_decision_log(settings: ServeSettings, metrics: ServerMetrics | None = None
                      ) -> DecisionLog | None:
    """This process's handle on `--decision-log`: a file that is not a decision log (foreign,
    damaged, newer) is an error before serving; a disk that refuses writes is not (rows are
    dropped and counted, serving goes on)."""
    if settings.decision_log is None:
        return None
    return DecisionLog(settings.decision_log, log_text=settings.log_text,
                       max_rows=settings.decision_log_max_rows,
                       on_count=None if metrics is None else metrics.count_decision_log)
