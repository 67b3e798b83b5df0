"""The spans of one answer: a no-op unless a real tracer provider is set (see `imad.tracing`).

Decorators wrap the traced functions (`Pipeline.answer`, `SelfCritique.run`, `DebateBackend.run`)
so their code is unchanged; `_DebateSpans` turns a debate's recorded calls into round spans and
`chat` spans. Attributes follow the OpenTelemetry GenAI conventions where they exist
(`gen_ai.*`), imad's own (`imad.*`) elsewhere.
"""

from __future__ import annotations

import contextvars
import functools
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from imad.decide.schema import SPAN_PREFIX, view

TRACER_NAME = "imad"
PROVIDERS = {"OpenAICompatibleChat": "openai", "LocalGGUFChat": "llama_cpp",
             "ScriptedChat": "imad.scripted"}
"""`gen_ai.provider.name` per chat back-end class: OpenAI-compatible servers speak OpenAI's API
(the GenAI conventions' advice); wrappers (cache, cancel, upstream watch) are looked through."""

F = TypeVar("F", bound=Callable[..., Any])


class _NoSpan:
    """What `span()` gives when tracing is off: every method does nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set(self, attributes: Mapping[str, Any]) -> None:
        pass

    def fail(self, error_type: str) -> None:
        pass


NO_SPAN = _NoSpan()
_cached: tuple[Any, Any] | None = None  # (provider, its imad tracer)


def tracer() -> Any | None:
    """imad's tracer when a real tracer provider is set globally, else None (see the docstring)."""
    global _cached
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    cached = _cached
    if cached is None or cached[0] is not provider:
        from imad import __version__

        cached = _cached = (provider, provider.get_tracer(TRACER_NAME, __version__))
    return cached[1]


class _LiveSpan:
    """A started span made current for the `with` block; `set` adds attributes, `fail` an error."""

    __slots__ = ("_manager", "span")

    def __init__(self, manager: Any) -> None:
        self._manager = manager
        self.span: Any = None

    def __enter__(self) -> _LiveSpan:
        self.span = self._manager.__enter__()
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> Any:
        if error is not None:
            self.fail(type(error).__name__)
        return self._manager.__exit__(kind, error, tb)

    def set(self, attributes: Mapping[str, Any]) -> None:
        self.span.set_attributes(clean(attributes))

    def fail(self, error_type: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        self.span.set_attribute("error.type", error_type)
        self.span.set_status(Status(StatusCode.ERROR, error_type))


def span(name: str, attributes: Mapping[str, Any] | None = None, *,
         kind: str = "internal") -> _LiveSpan | _NoSpan:
    """A context manager: a current span named `name` when tracing is on, else `NO_SPAN`."""
    active = tracer()
    if active is None:
        return NO_SPAN
    from opentelemetry.trace import SpanKind

    return _LiveSpan(active.start_as_current_span(
        name, kind=SpanKind[kind.upper()], attributes=clean(attributes or {}),
        record_exception=False, set_status_on_exception=False))


def annotate(attributes: Mapping[str, Any]) -> None:
    """Add attributes to the current span, if tracing is on (e.g. a feature batch's size)."""
    if tracer() is not None:
        from opentelemetry import trace

        trace.get_current_span().set_attributes(clean(attributes))


def clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes OpenTelemetry accepts: None dropped, tuples as lists."""
    return {key: list(value) if isinstance(value, tuple) else value
            for key, value in attributes.items() if value is not None}


# ---- the spans of the pipeline's stages (decorators keep the traced code unchanged) ----------

def provider_name(model: Any) -> str:
    """`gen_ai.provider.name` of a chat model, looking through wrappers (`.inner`)."""
    seen = 0
    while getattr(model, "inner", None) is not None and seen < 16:
        model, seen = model.inner, seen + 1
    return PROVIDERS.get(type(model).__name__, "imad." + type(model).__name__)


def chat_attributes(model: Any, request: Any) -> dict[str, Any]:
    """GenAI request attributes of one chat call (no message content)."""
    return {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider_name(model),
            "gen_ai.request.model": model.model_id, "gen_ai.request.max_tokens": request.max_tokens,
            "gen_ai.request.temperature": request.temperature, "gen_ai.request.seed": request.seed}


def traced_critique(run: F) -> F:
    """`SelfCritique.run` as a `chat {model}` span with the GenAI attributes of its result."""

    @functools.wraps(run)
    def wrapper(self: Any, question: Any) -> Any:
        if tracer() is None:
            return run(self, question)
        request = self.request(question)
        attributes = {**chat_attributes(self.model, request), "imad.stage": "self_critique"}
        with span(f"chat {self.model.model_id}", attributes, kind="client") as traced:
            result = run(self, question)
            traced.set({"gen_ai.usage.input_tokens": result.prompt_tokens,
                        "gen_ai.usage.output_tokens": result.completion_tokens,
                        "gen_ai.response.model": result.model_id or None,
                        "gen_ai.response.finish_reasons": [result.finish_reason],
                        "imad.critique.status": result.status,
                        "imad.critique.confidence_source": result.confidence_source})
            if result.status == "llm_error":
                traced.fail((result.error or "LLMError").split(":", 1)[0])
            return result

    return wrapper  # type: ignore[return-value]


def decision_attributes(decision: Any) -> dict[str, Any]:
    """A RouterDecision's `span` view (`imad.decide.schema`) as `imad.router.*` attributes."""
    return {SPAN_PREFIX + key: value for key, value in view("span", decision.values()).items()}


def traced_decision(decide: F) -> F:
    """A function returning a `RouterDecision` as an `imad.decision` span with its fields."""

    @functools.wraps(decide)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if tracer() is None:
            return decide(*args, **kwargs)
        with span("imad.decision") as traced:
            decision = decide(*args, **kwargs)
            if hasattr(decision, "outcome"):
                traced.set(decision_attributes(decision))
            return decision

    return wrapper  # type: ignore[return-value]


def features_span(schema_version: int, n_features: int) -> _LiveSpan | _NoSpan:
    """The `imad.features` span around one answer's extraction."""
    return span("imad.features", {"imad.features.schema_version": schema_version,
                                  "imad.features.count": n_features})


def traced_answer(answer: F) -> F:
    """`Pipeline.answer` as an `imad.answer` span: where the answer came from and its tokens."""

    @functools.wraps(answer)
    def wrapper(self: Any, question: Any) -> Any:
        if tracer() is None:
            return answer(self, question)
        with span("imad.answer") as traced:
            result = answer(self, question)
            traced.set({"imad.question.id": result.question.id, "imad.answer.source": result.source,
                        "imad.escalated": result.escalated, "imad.llm_calls": len(result.trace),
                        "gen_ai.usage.input_tokens": result.prompt_tokens,
                        "gen_ai.usage.output_tokens": result.completion_tokens})
            if result.error is not None:
                traced.fail(result.error.split(":", 1)[0])
            return result

    return wrapper  # type: ignore[return-value]


class _DebateSpans:
    """The round spans of one debate: a round opens when a batch of a new round starts and ends
    when the next round starts or the debate ends; each recorded call becomes a `chat` span."""

    def __init__(self, active: Any, backend: str, parent: Any) -> None:
        self.tracer, self.backend, self.parent = active, backend, parent
        self.round: int | None = None
        self.current: Any = None
        self.totals: dict[str, Any] = {}

    def begin(self, round_index: int) -> None:
        if round_index == self.round:
            return
        self.close()
        self.round = round_index
        self.totals = {"agents": set(), "calls": 0, "failed": 0, "input": 0, "output": 0}
        self.current = self.tracer.start_span(
            "imad.debate.round", context=self.parent,
            attributes={"imad.debate.backend": self.backend, "imad.debate.round": round_index})

    def call(self, model: Any, request: Any, recorded: Any) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self.begin(recorded.round)
        totals = self.totals
        totals["agents"].add(recorded.agent)
        totals["calls"] += 1
        totals["failed"] += recorded.error is not None
        totals["input"] += recorded.prompt_tokens
        totals["output"] += recorded.completion_tokens
        end = time.time_ns()
        attributes = {**chat_attributes(model, request), "imad.stage": "debate",
                      "imad.debate.agent": recorded.agent, "imad.debate.role": recorded.role,
                      "imad.debate.round": recorded.round,
                      "gen_ai.usage.input_tokens": recorded.prompt_tokens,
                      "gen_ai.usage.output_tokens": recorded.completion_tokens}
        call = self.tracer.start_span(f"chat {model.model_id}", kind=SpanKind.CLIENT,
                                      context=trace.set_span_in_context(self.current),
                                      attributes=clean(attributes),
                                      start_time=end - int(recorded.latency_s * 1e9))
        if recorded.error is not None:
            error_type = recorded.error.split(":", 1)[0]
            call.set_attribute("error.type", error_type)
            call.set_status(Status(StatusCode.ERROR, error_type))
        call.end(end_time=end)

    def close(self) -> None:
        if self.current is None:
            return
        totals = self.totals
        self.current.set_attributes({
            "imad.debate.agents": sorted(totals["agents"]), "imad.debate.calls": totals["calls"],
            "imad.debate.failed_calls": totals["failed"],
            "gen_ai.usage.input_tokens": totals["input"], "gen_ai.usage.output_tokens": totals["output"]})
        self.current.end()
        self.current = None


_debate: contextvars.ContextVar[_DebateSpans | None] = contextvars.ContextVar("imad_debate", default=None)


def debate_round(round_index: int) -> None:
    """A batch of calls of `round_index` starts (opens that round's span if it is a new one)."""
    spans = _debate.get()
    if spans is not None:
        spans.begin(round_index)


def debate_call(model: Any, request: Any, recorded: Any) -> None:
    """One recorded debate call (`DebateCall`) as a `chat` span of its round."""
    spans = _debate.get()
    if spans is not None:
        spans.call(model, request, recorded)


def traced_debate(run: F) -> F:
    """`DebateBackend.run` as an `imad.debate` span holding one span per round."""

    @functools.wraps(run)
    def wrapper(self: Any, question: Any, seed_response: Any = None) -> Any:
        active = tracer()
        if active is None:
            return run(self, question, seed_response)
        from opentelemetry import trace

        with span("imad.debate", {"imad.debate.backend": self.name}) as traced:
            spans = _DebateSpans(active, self.name, trace.set_span_in_context(traced.span))
            token = _debate.set(spans)
            try:
                result = run(self, question, seed_response)
            finally:
                spans.close()
                _debate.reset(token)
            traced.set({"imad.debate.rounds": len(result.rounds), "imad.debate.calls": len(result.trace),
                        "imad.debate.stop_reason": result.stop_reason,
                        "gen_ai.usage.input_tokens": result.prompt_tokens,
                        "gen_ai.usage.output_tokens": result.completion_tokens})
            return result

    return wrapper  # type: ignore[return-value]


async def traced_request(answer: Any, *, model: str, request_id: str) -> Any:
    """Await the server's `runner.answer(...)` coroutine inside an `imad.request` span whose
    status code is 200, or the ServeError's status (499 for a client that went away)."""
    if tracer() is None:
        return await answer
    with span("imad.request", {"gen_ai.request.model": model, "imad.request_id": request_id}) as traced:
        try:
            result = await answer
        except BaseException as error:
            status = getattr(error, "status", None)
            if type(error).__name__ == "ClientDisconnected":
                status = 499
            traced.set({"http.response.status_code": status if isinstance(status, int) else 500})
            raise
        traced.set({"http.response.status_code": 200})
        return result
