"""The OpenAI-compatible routing server as an ASGI app (FastAPI): `create_app(settings, factory)`.

Endpoints:
- `POST /v1/chat/completions`: runs the pipeline on the last user message; the answer comes back
  as a standard chat completion (or SSE chunks with `stream: true`) whose `usage` counts every
  LLM call made, with the routing decision in the extra field `imad` and the header
  `X-Imad-Decision` (compact ASCII JSON). The model name picks back-end and τ (`model_names`).
- `GET /v1/models`, `GET /v1/models/{id}`: the servable model names.
- `GET /health`: liveness, load, both concurrency limits (the server's and the upstream
  client's) and the scoring processes, without auth (for load balancers).
- `GET /metrics`: Prometheus metrics (`imad.serve.metrics`), auth like /v1 unless
  `--metrics-public`.
- `GET /v1/imad/stats` (auth like /v1): the router, its OOD policy, and with
  `--target-trigger-rate` each model name's trigger budget — τ now, whether the budget set it,
  the realized trigger rate over its window (`imad.serve.budgets`). Not in /health, which is
  open to anyone who can reach the port.

Every error has OpenAI's shape `{"error": {"message", "type", "param", "code"}}`: 400 malformed
body, invalid field or empty question; 401 missing or wrong key; 404 unknown model or path; 413
body, question or prompt (counted in the model's tokens) too large; 429 the queue for the slots
is full or the wait passed --queue-timeout (with Retry-After); 502 the upstream model server
failed or gave nothing usable; 504 upstream or pipeline timeout; 500 a bug (logged). Responses,
headers and SSE events are strict JSON: a non-finite number is written as null, never as NaN or
Infinity.

A client that disconnects — while sending its body or while its pipeline runs — is logged as one
`client_disconnected` line (status 499, no traceback), and its pipeline is cancelled at its next
LLM call so its slot frees (`imad.serve.runner`).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from imad import __version__, tracing
from imad.errors import ServeError
from imad.serve.auth import check_bearer
from imad.serve.factory import PipelineFactory
from imad.serve.limits import read_body
from imad.serve.logs import decision_log_fields, log_event
from imad.serve.metrics import ServerMetrics
from imad.serve.model_names import listed_model_names, parse_model_name
from imad.serve.models import (
    ModelCard,
    ModelList,
    completion_from_answer,
    decision_header,
    parse_chat_request,
)
from imad.serve.questions import question_from_request
from imad.serve.runner import ClientDisconnected, PipelineRunner
from imad.serve.settings import ServeSettings
from imad.serve.streaming import sse_events
from imad.serve.upstream import upstream_concurrency

FINGERPRINT = f"imad-{__version__}"
CLIENT_CLOSED_REQUEST = 499
"""The status logged for a client that went away (nginx's convention); nobody receives it."""


async def wait_for_disconnect(request: Request) -> None:
    """Return once the client of `request` has disconnected (its body must be read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def error_response(error: ServeError, request_id: str | None = None) -> JSONResponse:
    """The OpenAI-shaped JSON error response for `error`, with its headers."""
    headers = dict(error.headers)
    if request_id:
        headers["X-Request-Id"] = request_id
    return JSONResponse(error.to_body(), status_code=error.status, headers=headers)


def create_app(settings: ServeSettings, factory: PipelineFactory) -> FastAPI:
    """The routing server's app. Prepares the factory now, so bad config fails before serving."""
    metrics = ServerMetrics()
    runner = PipelineRunner(factory, settings, metrics)  # its scoring processes warm up meanwhile
    try:
        factory.prepare(settings.ood_policy)
        runner.scorer.wait_ready()
    except BaseException:
        runner.close()
        raise
    started = int(time.time())
    limits = {"max_concurrency": settings.max_concurrency,
              "upstream_max_concurrency": upstream_concurrency(factory.model),
              "max_queue": settings.queue_limit, "queue_timeout_s": settings.queue_timeout_s,
              "scoring_processes": runner.scoring_processes}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        log_event("server_ready", upstream_model=factory.model.model_id, router=factory.router.name,
                  default_backend=settings.default_backend, default_tau=settings.default_tau,
                  **limits, workers=settings.workers, auth=settings.api_key is not None)
        yield
        runner.close()
        log_event("server_stopped")

    app = FastAPI(title="imad routing server", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url=None)
    app.state.runner = runner
    app.state.metrics = metrics

    @app.exception_handler(ServeError)
    async def on_serve_error(request: Request, error: ServeError) -> JSONResponse:
        log_event("request_refused", level=logging.WARNING, path=request.url.path,
                  status=error.status, code=error.code, error=error.message)
        return error_response(error)

    @app.exception_handler(HTTPException)
    async def on_http_error(request: Request, error: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        message = f"{request.method} {request.url.path}: {error.detail}"
        return error_response(ServeError(error.status_code, message, code=code))

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        return error_response(ServeError(400, f"invalid request: {error.errors()[0]['msg']}",
                                         code="invalid_request"))

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "upstream_model": factory.model.model_id,
                "in_flight": runner.in_flight, "waiting": runner.limiter.waiting, **limits}

    @app.get("/metrics")
    async def prometheus_metrics(request: Request) -> Response:
        if not settings.metrics_public:
            check_bearer(request.headers.get("authorization"), settings.api_key)
        runner.report_load()
        body, content_type = metrics.render()
        return Response(body, media_type=content_type)

    @app.get("/v1/imad/stats")
    async def routing_stats(request: Request) -> dict[str, Any]:
        check_bearer(request.headers.get("authorization"), settings.api_key)
        budgets = runner.budgets
        policy = factory.default_policy()
        return {"router": factory.router.name, "tau": factory.router.tau,
                "ood_statistics": factory.router.ood_detector is not None,
                "ood_policy": policy.ood_policy,
                "target_trigger_rate": settings.target_trigger_rate,
                "budget_window": None if budgets is None else settings.budget_window,
                "budgets": {} if budgets is None else budgets.stats()}

    @app.get("/v1/models")
    async def list_models(request: Request) -> dict[str, Any]:
        check_bearer(request.headers.get("authorization"), settings.api_key)
        cards = [ModelCard(id=name, created=started) for name in listed_model_names()]
        return ModelList(data=cards).model_dump()

    @app.get("/v1/models/{model_id}")
    async def retrieve_model(model_id: str, request: Request) -> dict[str, Any]:
        check_bearer(request.headers.get("authorization"), settings.api_key)
        parse_model_name(model_id, default_backend=settings.default_backend, default_tau=settings.default_tau)
        return ModelCard(id=model_id, created=started).model_dump()

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        clock = time.perf_counter()
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        fields: dict[str, Any] = {"request_id": completion_id}
        model_name: str | None = None  # the metrics' label, once the name is known to be valid

        def elapsed_ms() -> float:
            return round((time.perf_counter() - clock) * 1000, 1)

        try:
            check_bearer(request.headers.get("authorization"), settings.api_key)
            chat = parse_chat_request(await read_body(request, settings.max_request_bytes))
            fields.update(model=chat.model, stream=chat.stream)
            choice = parse_model_name(chat.model, default_backend=settings.default_backend,
                                      default_tau=settings.default_tau)
            model_name = choice.name.strip()
            question = question_from_request(chat, max_chars=settings.max_question_chars,
                                             question_id=completion_id)
            fields["question_chars"] = len(question.text) + len(question.context)
            if settings.log_prompts:
                fields["question"] = question.text
            answer = await tracing.traced_request(
                runner.answer(question, choice, request_id=completion_id,
                              disconnected=lambda: wait_for_disconnect(request)),
                model=model_name, request_id=completion_id)
        except (ClientDisconnect, ClientDisconnected) as error:
            stage = "sending its request" if isinstance(error, ClientDisconnect) else "waiting for its answer"
            log_event("client_disconnected", level=logging.WARNING, status=CLIENT_CLOSED_REQUEST,
                      stage=stage, latency_ms=elapsed_ms(), **fields)
            metrics.count_request(model_name, CLIENT_CLOSED_REQUEST)
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        except ServeError as error:
            log_event("chat_completion", level=logging.WARNING if error.status < 500 else logging.ERROR,
                      status=error.status, code=error.code, error=error.message,
                      latency_ms=elapsed_ms(), **fields)
            metrics.count_request(model_name, error.status)
            return error_response(error, completion_id)
        except Exception:
            log_event("chat_completion", level=logging.ERROR, exc_info=True, status=500,
                      latency_ms=elapsed_ms(), **fields)
            metrics.count_request(model_name, 500)
            return error_response(ServeError(500, f"internal error; the server log has the details "
                                                  f"under request id {completion_id}",
                                             type="server_error", code="internal_error"), completion_id)
        completion = completion_from_answer(answer, choice, completion_id=completion_id,
                                            created=int(time.time()), fingerprint=FINGERPRINT)
        log_event("chat_completion", status=200, **decision_log_fields(completion),
                  latency_ms=elapsed_ms(), **fields)
        headers = {"X-Imad-Decision": decision_header(completion.imad), "X-Request-Id": completion_id}
        metrics.count_request(model_name, 200)
        if chat.stream:
            include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
            return StreamingResponse(sse_events(completion, include_usage=include_usage),
                                     media_type="text/event-stream",
                                     headers={**headers, "Cache-Control": "no-cache"})
        return JSONResponse(completion.model_dump(), headers=headers)

    return app
