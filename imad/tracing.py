"""OpenTelemetry spans for each stage of an answer (SPEC §15, issue 20): optional extra `otel`.

When tracing is on:
- it is on exactly when a tracer provider other than the API's default (proxy / no-op) is set
  globally: by the application, by `opentelemetry-instrument`, by a test, or by `imad serve`
  (below). imad never imports opentelemetry to find out: no provider can be set without
  `opentelemetry.trace` in `sys.modules`, so when it is absent every `span()` is a shared no-op
  object (a dict lookup), and `import imad`, `imad ask` load no opentelemetry module.
- `imad serve` (each worker too) calls `configure_from_environment()`: with the SDK installed
  (`pip install 'imad[otel]'`), no provider set yet, `OTEL_SDK_DISABLED` not true, and
  `OTEL_TRACES_EXPORTER` or an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`,
  `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, it installs an SDK `TracerProvider` whose resource,
  sampler, batch processor and exporters read the standard variables themselves. Without an
  explicit exporter or endpoint nothing is exported (the spec's default, OTLP to localhost,
  would log a failed export every few seconds on every machine without a collector).

Spans (names and attributes are the README's "Traces" table):
`imad.request` (server) → `imad.answer` (Pipeline.answer) → `chat {model}` (the self-critique,
GenAI conventions), `imad.decision` (RouterDecision fields) → `imad.features`, and `imad.debate`
→ `imad.debate.round` (one per round) → `chat {model}` (each debate call, timed from its
latency when it was recorded). Errors set the span status and `error.type` (the exception's
class name) only: no message, prompt, answer text or key is ever recorded.
"""

from __future__ import annotations

import contextvars
import functools
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from imad.errors import ConfigError, MissingDependencyError

TRACER_NAME = "imad"
EXPORTER_GROUP = "opentelemetry_traces_exporter"
OTLP_BY_PROTOCOL = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}
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
    """A RouterDecision's fields as `imad.router.*` attributes (read, never recomputed)."""
    return {"imad.router.p": decision.p, "imad.router.tau": decision.tau,
            "imad.router.tau_source": decision.tau_source, "imad.router.ood": decision.ood,
            "imad.router.ood_score": decision.ood_score, "imad.router.ood_policy": decision.ood_policy,
            "imad.router.escalate": decision.escalate, "imad.router.outcome": decision.outcome,
            "imad.router.score_status": decision.score_status,
            "imad.router.parse_status": decision.parse_status}


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


# ---- imad serve: an SDK provider from the standard environment variables ------------------------

def exporter_names(environ: Mapping[str, str]) -> list[str]:
    """The trace exporters' entry-point names the environment asks for ([] for none)."""
    names = environ.get("OTEL_TRACES_EXPORTER")
    if names is None:
        endpoint = (environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                    or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
        names = "otlp" if endpoint else "none"
    chosen = [name.strip().lower() for name in names.split(",") if name.strip()]
    if chosen == ["none"] or not chosen:
        return []
    protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip()
    if "otlp" in chosen and protocol not in OTLP_BY_PROTOCOL:
        variable = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" if environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                    else "OTEL_EXPORTER_OTLP_PROTOCOL")
        raise ConfigError(variable,
                          f"must be one of {sorted(OTLP_BY_PROTOCOL)}, got {protocol!r}")
    return [OTLP_BY_PROTOCOL[protocol] if name == "otlp" else name for name in chosen]


def provider_from_environment(environ: Mapping[str, str] | None = None) -> Any | None:
    """An SDK TracerProvider exporting where the environment says, or None when it asks for no
    export, disables the SDK, or a provider is set already. ConfigError names a bad variable;
    MissingDependencyError the extra when the SDK or an exporter package is missing."""
    environ = os.environ if environ is None else environ
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    names = exporter_names(environ)
    if not names:
        return None
    check_environment(environ)
    if "opentelemetry.trace" in sys.modules and tracer() is not None:
        return None  # the application (or opentelemetry-instrument) configured tracing already
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise MissingDependencyError("opentelemetry-sdk", "pip install 'imad[otel]'",
                                     "exporting traces (OTEL_TRACES_EXPORTER)") from None
    exporters = [_exporter_class(name) for name in names]
    provider = TracerProvider()  # resource and sampler from OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER…
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter()))
    return provider


def configure_from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Set the provider of `provider_from_environment` globally; True when tracing was set up."""
    provider = provider_from_environment(environ)
    if provider is None:
        return False
    from opentelemetry import trace

    trace.set_tracer_provider(provider)
    return True


BSP_INTEGERS = {"OTEL_BSP_SCHEDULE_DELAY": 1, "OTEL_BSP_EXPORT_TIMEOUT": 0,
                "OTEL_BSP_MAX_QUEUE_SIZE": 1, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": 1}
"""The batch span processor's integer variables and their least value; the SDK logs a traceback
for a non-integer and overflows on a huge one, so they are checked here first."""
MAX_BSP_VALUE = 2**31 - 1
SAMPLERS = ("always_on", "always_off", "traceidratio", "parentbased_always_on",
            "parentbased_always_off", "parentbased_traceidratio")


def check_environment(environ: Mapping[str, str]) -> None:
    """ConfigError naming the first OTEL_* variable of the trace export the SDK would refuse,
    misread or silently replace (an integer, endpoint, timeout, sampler or ratio)."""
    from urllib.parse import urlsplit

    for name, least in BSP_INTEGERS.items():
        value = environ.get(name)
        if value is not None and not (value.strip().isascii() and value.strip().isdigit()
                                      and len(value.strip()) <= 10
                                      and least <= int(value) <= MAX_BSP_VALUE):
            raise ConfigError(name, f"must be an integer in [{least}, {MAX_BSP_VALUE}], got {value[:40]!r}")
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        value = environ.get(name)
        if value is None:
            continue
        try:
            parts = urlsplit(value)
            usable = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        except (ValueError, UnicodeError):
            usable = False
        if not usable or not value.isascii():
            raise ConfigError(name, f"must be an http(s) URL with a host, got {value[:80]!r}")
    for name in ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"):
        value = environ.get(name)
        if value is not None and not _in_range(value, 0.0, 3600.0, low_open=True):
            raise ConfigError(name, f"must be a number of seconds in (0, 3600], got {value[:40]!r}")
    sampler = environ.get("OTEL_TRACES_SAMPLER")
    if sampler is not None:
        from importlib.metadata import entry_points

        known = {*SAMPLERS, *(point.name for point in entry_points(group="opentelemetry_traces_sampler"))}
        if sampler.strip().lower() not in known:
            raise ConfigError("OTEL_TRACES_SAMPLER", f"unknown sampler {sampler[:40]!r}; choose one of "
                                                     f"{', '.join(sorted(known))}")
        argument = environ.get("OTEL_TRACES_SAMPLER_ARG")
        if "traceidratio" in sampler.lower() and argument is not None and not _in_range(argument, 0.0, 1.0):
            raise ConfigError("OTEL_TRACES_SAMPLER_ARG", f"must be a ratio in [0, 1], got {argument[:40]!r}")


def _in_range(text: str, low: float, high: float, *, low_open: bool = False) -> bool:
    try:
        number = float(text)
    except ValueError:
        return False
    return (low < number if low_open else low <= number) and number <= high


def _exporter_class(name: str) -> type:
    from importlib.metadata import entry_points

    found = {point.name: point for point in entry_points(group=EXPORTER_GROUP)}
    if name not in found:
        if name.startswith("otlp"):
            package = "opentelemetry-exporter-otlp-proto-" + ("grpc" if "grpc" in name else "http")
            raise MissingDependencyError(package, f"pip install {package}", f"the {name!r} trace exporter")
        raise ConfigError("OTEL_TRACES_EXPORTER", f"unknown trace exporter {name[:40]!r}; installed: "
                                                  f"{', '.join(sorted(found)) or 'none'} (or 'none')")
    return found[name].load()
