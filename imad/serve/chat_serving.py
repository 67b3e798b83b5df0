"""Serving `POST /v1/chat/completions`: the request's pipeline, and every effect of its end.

The route (`imad.serve.routes.chat`) parses the body, calls `ChatServing.answer` (model name,
question, the pipeline under the request's trace span) and hands whatever came of it — an
answer, a refusal, a client gone, a bug — to `ChatServing.settle`. `settle` is the one home of
what every request does once it ends: its `chat_completion` (or `client_disconnected`) log
line, its count in `/metrics`, its decision-log row (also for a request whose pipeline ran but
gave no usable answer, a 502 or 504: `served` none and the upstream's error), the offer of its
shadow debate, and its response with the `X-Imad-Decision` and `X-Request-Id` headers. A
refusal before the handler runs (the key check) is settled there too
(`routes.chat.CountedRoute`). A new effect of every request (a live check, another log) is a
few lines in `settle`, nowhere else.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response, StreamingResponse

from imad import __version__, tracing
from imad.decision_log.answer_row import RouterIdentity, answer_row
from imad.decision_log.writer import DecisionLog
from imad.errors import ServeError
from imad.pipeline import PipelineAnswer
from imad.serve.logs import decision_log_fields, log_event
from imad.serve.metrics import ServerMetrics
from imad.serve.openai.error_responses import CLIENT_CLOSED_REQUEST, error_response
from imad.serve.openai.model_names import ModelChoice, parse_model_name
from imad.serve.openai.protocol import (
    ChatCompletionRequest,
    check_stream_options,
    completion_from_answer,
    decision_header,
)
from imad.serve.openai.questions import question_from_request
from imad.serve.openai.streaming import sse_events
from imad.serve.reload.swap import identity_values
from imad.serve.runner import ClientDisconnected, PipelineRunner
from imad.serve.settings import ServeSettings
from imad.serve.shadow_debates import ShadowDebates

FINGERPRINT = f"imad-{__version__}"


def new_completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def policy_rule(settings: ServeSettings) -> str:
    """How this server's policy chooses τ, as the decision log names it."""
    if settings.target_trigger_rate is None:
        return "fixed"
    return "budget"


@dataclass
class ChatCall:
    """One request on its way: its id, its clock, its log fields, and what is known of it so
    far (the body, and the model name once it is known to be valid: the metrics' label)."""

    id: str = field(default_factory=new_completion_id)
    clock: float = field(default_factory=time.perf_counter)
    fields: dict[str, Any] = field(default_factory=dict)
    chat: ChatCompletionRequest | None = None
    choice: ModelChoice | None = None
    model_name: str | None = None
    unanswered: Served | None = None
    """A pipeline that ran but gave no usable answer (its request fails with a 502 or 504)."""

    def __post_init__(self) -> None:
        self.fields.setdefault("request_id", self.id)

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.clock) * 1000, 1)


@dataclass(frozen=True)
class Served:
    """A pipeline's answer and the identity of the router that scored it."""

    answer: PipelineAnswer
    router: RouterIdentity


@dataclass
class ChatServing:
    """The chat completions of one app (module docstring)."""

    settings: ServeSettings
    runner: PipelineRunner
    metrics: ServerMetrics
    decision_log: DecisionLog | None = None
    shadow_debates: ShadowDebates | None = None

    async def answer(self, call: ChatCall, chat: ChatCompletionRequest,
                     disconnected: Callable[[], Awaitable[None]] | None = None) -> Served:
        """The answer to `chat`, or the `ServeError` / `ClientDisconnected` that ended it."""
        settings = self.settings
        call.chat = chat
        call.fields.update(model=chat.model, stream=chat.stream)
        call.choice = parse_model_name(chat.model, default_backend=settings.default_backend,
                                       default_tau=settings.default_tau)
        call.model_name = call.choice.name.strip()
        check_stream_options(chat)
        question = question_from_request(chat, max_chars=settings.max_question_chars,
                                         question_id=call.id)
        call.fields["question_chars"] = len(question.text) + len(question.context)
        if settings.log_prompts:
            call.fields["question"] = question.text
        def unanswered(answer: PipelineAnswer, router: RouterIdentity) -> None:
            call.unanswered = Served(answer, router)

        answer, router = await tracing.traced_request(
            self.runner.answer(question, call.choice, request_id=call.id, disconnected=disconnected,
                               unanswered=unanswered),
            model=call.model_name, request_id=call.id)
        return Served(answer, router)

    def settle(self, call: ChatCall, outcome: Served | BaseException) -> Response:
        """Log, count, record and answer the end of `call` (module docstring)."""
        if isinstance(outcome, (ClientDisconnect, ClientDisconnected)):
            sending = isinstance(outcome, ClientDisconnect)
            stage = "sending its request" if sending else "waiting for its answer"
            log_event("client_disconnected", level=logging.WARNING, status=CLIENT_CLOSED_REQUEST,
                      stage=stage, latency_ms=call.elapsed_ms(), **call.fields)
            self.metrics.count_request(call.model_name, CLIENT_CLOSED_REQUEST)
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        if isinstance(outcome, ServeError):
            log_event("chat_completion", level=logging.WARNING if outcome.status < 500 else logging.ERROR,
                      status=outcome.status, code=outcome.code, error=outcome.message,
                      latency_ms=call.elapsed_ms(), **call.fields)
            self.metrics.count_request(call.model_name, outcome.status)
            if call.unanswered is not None:  # a row, `served` none: /metrics counted it too
                self._record(call, call.unanswered)
            return error_response(outcome, call.id)
        if isinstance(outcome, BaseException):
            log_event("chat_completion", level=logging.ERROR, exc_info=outcome, status=500,
                      latency_ms=call.elapsed_ms(), **call.fields)
            self.metrics.count_request(call.model_name, 500)
            return error_response(ServeError(500, f"internal error; the server log has the details "
                                                  f"under request id {call.id}",
                                             type="server_error", code="internal_error"), call.id)
        assert call.chat is not None and call.choice is not None, "an answer follows `answer`"
        completion = completion_from_answer(outcome.answer, call.choice, completion_id=call.id,
                                            created=int(time.time()), fingerprint=FINGERPRINT,
                                            router=identity_values(outcome.router))
        log_event("chat_completion", status=200, **decision_log_fields(completion),
                  latency_ms=call.elapsed_ms(), **call.fields)
        headers = {"X-Imad-Decision": decision_header(completion.imad), "X-Request-Id": call.id}
        self.metrics.count_request(call.model_name, 200)
        self._record(call, outcome)
        shadow = self.shadow_debates
        after = None if shadow is None else BackgroundTask(shadow.offer, outcome.answer, call.choice,
                                                            call.id)
        if call.chat.stream:
            options = call.chat.stream_options
            include_usage = bool(options and options.include_usage)
            return StreamingResponse(sse_events(completion, include_usage=include_usage),
                                     media_type="text/event-stream",
                                     headers={**headers, "Cache-Control": "no-cache"}, background=after)
        return JSONResponse(completion.model_dump(), headers=headers, background=after)

    def _record(self, call: ChatCall, served: Served) -> None:
        """The decision-log row of `call` (part of `settle`); queued: the disk is the writer
        thread's, never the request's."""
        if self.decision_log is None or call.choice is None or call.model_name is None:
            return
        self.decision_log.record(answer_row(
            served.answer, completion_id=call.id, model=call.model_name, backend=call.choice.backend,
            identity=served.router, policy_rule=policy_rule(self.settings)))
