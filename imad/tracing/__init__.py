"""OpenTelemetry spans for each stage of an answer: optional extra `otel`.

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

Spans (names and attributes are the "Traces" table of docs/reference/metrics.md):
`imad.request` (server) → `imad.answer` (Pipeline.answer) → `chat {model}` (the self-critique,
GenAI conventions), `imad.decision` (RouterDecision fields) → `imad.features`, and `imad.debate`
→ `imad.debate.round` (one per round) → `chat {model}` (each debate call, timed from its
latency when it was recorded). Errors set the span status and `error.type` (the exception's
class name) only: no message, prompt, answer text or key is ever recorded.
"""

from imad.tracing.environment import (
    check_environment,
    check_propagators,
    configure_from_environment,
    exporter_names,
    provider_from_environment,
)
from imad.tracing.spans import (
    NO_SPAN,
    PROVIDERS,
    TRACER_NAME,
    annotate,
    clean,
    debate_call,
    debate_round,
    features_span,
    provider_name,
    span,
    traced_answer,
    traced_critique,
    traced_debate,
    traced_decision,
    traced_request,
    tracer,
)

__all__ = ["NO_SPAN", "PROVIDERS", "TRACER_NAME", "annotate", "check_environment",
           "check_propagators", "clean",
           "configure_from_environment", "debate_call", "debate_round", "exporter_names",
           "features_span", "provider_from_environment", "provider_name", "span", "traced_answer",
           "traced_critique", "traced_debate", "traced_decision", "traced_request", "tracer"]
