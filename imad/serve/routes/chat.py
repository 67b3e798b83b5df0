"""`POST /v1/chat/completions`: the pipeline on the last user message.

The answer comes back as a standard chat completion (or SSE chunks with `stream: true`) whose
`usage` counts every LLM call made, with the routing decision in the extra field `imad` and the
header `X-Imad-Decision` (compact ASCII JSON). The model name picks back-end and τ
(`model_names`). Every request — refused by the key check, refused by the handler, answered or
abandoned — is one `chat_completion` log line (or `client_disconnected`) and one count in
`/metrics`: `CountedRoute` accounts for refusals that happen before the handler runs. With
`--decision-log` each answered request is also one row of the decision log (queued, written by
the log's own thread). With `--shadow --shadow-debate-rate R` a sampled answer's debate is
queued once the response is sent (`imad.serve.shadow_debates`), never on its latency.

`stream_options` without `stream: true` is a 400, as OpenAI's API answers it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect

from imad import __version__, tracing
from imad.decision_log.answer_row import answer_row
from imad.errors import ServeError
from imad.serve.error_responses import CLIENT_CLOSED_REQUEST, error_response
from imad.serve.limits import read_body
from imad.serve.logs import decision_log_fields, log_event
from imad.serve.metrics import ServerMetrics
from imad.serve.model_names import parse_model_name
from imad.serve.models import (
    ChatCompletionRequest,
    completion_from_answer,
    decision_header,
    parse_chat_request,
)
from imad.serve.questions import question_from_request
from imad.serve.reload import identity_values
from imad.serve.routes.state import Server
from imad.serve.runner import ClientDisconnected
from imad.serve.settings import ServeSettings
from imad.serve.streaming import sse_events

FINGERPRINT = f"imad-{__version__}"


def new_completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def refuse(error: ServeError, metrics: ServerMetrics, model_name: str | None, latency_ms: float,
           fields: dict[str, Any]) -> JSONResponse:
    """Log and count a refused request, and answer it in OpenAI's error shape."""
    log_event("chat_completion", level=logging.WARNING if error.status < 500 else logging.ERROR,
              status=error.status, code=error.code, error=error.message, latency_ms=latency_ms, **fields)
    metrics.count_request(model_name, error.status)
    return error_response(error, fields["request_id"])


class CountedRoute(APIRoute):
    """A route whose refusals before its handler (a router dependency such as the key check)
    are logged and counted like the handler's own."""

    def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
        handle = super().get_route_handler()

        async def handle_counted(request: Request) -> Response:
            clock = time.perf_counter()
            try:
                return await handle(request)
            except ServeError as error:
                latency_ms = round((time.perf_counter() - clock) * 1000, 1)
                return refuse(error, request.app.state.server.metrics, None, latency_ms,
                              {"request_id": new_completion_id()})

        return handle_counted


def check_stream_options(chat: ChatCompletionRequest) -> None:
    """OpenAI refuses `stream_options` on a request that does not stream; so does imad."""
    if chat.stream_options is not None and not chat.stream:
        raise ServeError(400, "The 'stream_options' parameter is only allowed when 'stream' is "
                              "enabled: add \"stream\": true or drop stream_options",
                         code="invalid_request", param="stream_options")


def policy_rule(settings: ServeSettings) -> str:
    """How this server's policy chooses τ, as the decision log names it."""
    if settings.target_trigger_rate is None:
        return "fixed"
    return "budget"


async def wait_for_disconnect(request: Request) -> None:
    """Return once the client of `request` has disconnected (its body must be read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


router = APIRouter(route_class=CountedRoute)


@router.post("/v1/chat/completions")
async def chat_completions(request: Request, server: Server) -> Response:
    settings, runner, metrics = server.settings, server.runner, server.metrics
    clock = time.perf_counter()
    completion_id = new_completion_id()
    fields: dict[str, Any] = {"request_id": completion_id}
    model_name: str | None = None  # the metrics' label, once the name is known to be valid

    def elapsed_ms() -> float:
        return round((time.perf_counter() - clock) * 1000, 1)

    try:
        chat = parse_chat_request(await read_body(request, settings.max_request_bytes))
        fields.update(model=chat.model, stream=chat.stream)
        choice = parse_model_name(chat.model, default_backend=settings.default_backend,
                                  default_tau=settings.default_tau)
        model_name = choice.name.strip()
        check_stream_options(chat)
        question = question_from_request(chat, max_chars=settings.max_question_chars,
                                         question_id=completion_id)
        fields["question_chars"] = len(question.text) + len(question.context)
        if settings.log_prompts:
            fields["question"] = question.text
        answer, router_id = await tracing.traced_request(
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
        return refuse(error, metrics, model_name, elapsed_ms(), fields)
    except Exception:
        log_event("chat_completion", level=logging.ERROR, exc_info=True, status=500,
                  latency_ms=elapsed_ms(), **fields)
        metrics.count_request(model_name, 500)
        return error_response(ServeError(500, f"internal error; the server log has the details "
                                              f"under request id {completion_id}",
                                         type="server_error", code="internal_error"), completion_id)
    completion = completion_from_answer(answer, choice, completion_id=completion_id,
                                        created=int(time.time()), fingerprint=FINGERPRINT,
                                        router=identity_values(router_id))
    log_event("chat_completion", status=200, **decision_log_fields(completion),
              latency_ms=elapsed_ms(), **fields)
    headers = {"X-Imad-Decision": decision_header(completion.imad), "X-Request-Id": completion_id}
    metrics.count_request(model_name, 200)
    if server.decision_log is not None:  # queued: the disk is the writer thread's, never ours
        server.decision_log.record(answer_row(
            answer, completion_id=completion_id, model=model_name, backend=choice.backend,
            identity=router_id, policy_rule=policy_rule(settings)))
    shadow = server.shadow_debates
    after = None if shadow is None else BackgroundTask(shadow.offer, answer, choice, completion_id)
    if chat.stream:
        include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
        return StreamingResponse(sse_events(completion, include_usage=include_usage),
                                 media_type="text/event-stream",
                                 headers={**headers, "Cache-Control": "no-cache"}, background=after)
    return JSONResponse(completion.model_dump(), headers=headers, background=after)
