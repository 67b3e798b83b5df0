"""`imad serve`'s trace export, configured by OpenTelemetry's standard environment variables.

`configure_from_environment()` (called by `imad serve` and each of its workers) installs an SDK
`TracerProvider` when the SDK is installed (`pip install 'imad[otel]'`), no provider is set yet,
`OTEL_SDK_DISABLED` is not true, and `OTEL_TRACES_EXPORTER` or an OTLP endpoint asks for export.
The SDK reads the rest itself (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, the sampler, the
batch processor, the span limits, the exporter's endpoint, headers, compression and
certificates); every value it would refuse with a traceback, overflow on or silently ignore or
replace is checked first (`ENVIRONMENT`, `check_environment`), as a ConfigError naming it.

OTEL_PROPAGATORS is not imad's (it propagates no context to the upstream), but the OpenTelemetry
API reads it when FastAPI is imported and raises a ValueError on a name no installed package
provides, so `check_propagators` refuses such a name first, export or not.

Read by nothing in imad, so never checked (documented in docs/reference/metrics.md):
OTEL_METRICS_EXPORTER and OTEL_LOGS_EXPORTER (imad exports traces only; metrics are
Prometheus's), and OTEL_PYTHON_* (auto-instrumentation's).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from imad.constraints import (
    URL,
    Boolean,
    Constraint,
    Constraints,
    Integer,
    Options,
    Real,
    Refused,
    Text,
    check_value,
    parse_text,
)
from imad.errors import ConfigError, MissingDependencyError
from imad.tracing.spans import tracer

EXPORTER_GROUP = "opentelemetry_traces_exporter"
OTLP_BY_PROTOCOL = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}


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
    if "otlp" in chosen:
        variable = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" if environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                    else "OTEL_EXPORTER_OTLP_PROTOCOL")
        check_value(protocol, Options(*sorted(OTLP_BY_PROTOCOL)), variable)
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
    """Set the provider of `provider_from_environment` globally; True when tracing was set up.
    OTEL_PROPAGATORS is checked first (`check_propagators`)."""
    check_propagators(environ)
    provider = provider_from_environment(environ)
    if provider is None:
        return False
    from opentelemetry import trace

    trace.set_tracer_provider(provider)
    return True


PROPAGATOR_GROUP = "opentelemetry_propagator"


def check_propagators(environ: Mapping[str, str] | None = None) -> None:
    """ConfigError naming OTEL_PROPAGATORS when one of its comma-separated names is neither
    `none` nor an installed propagator: the OpenTelemetry API, imported by FastAPI, would raise
    a ValueError on it (read as the API reads it: up to the first `none`)."""
    environ = os.environ if environ is None else environ
    configured = environ.get("OTEL_PROPAGATORS")
    if not configured:
        return
    from importlib.metadata import entry_points

    installed = sorted({point.name for point in entry_points(group=PROPAGATOR_GROUP)})
    for name in (part.strip() for part in configured.split(",")):
        if name.lower() == "none":
            return
        if name not in installed:
            shown = repr(name if len(name) <= 80 else name[:80] + "…")
            raise ConfigError("OTEL_PROPAGATORS", f"{shown} is no installed propagator; name some of "
                                                  f"{', '.join(installed) or '(none installed)'} "
                                                  "separated by commas, or none, or unset it")


class KeyValues(Constraint):
    """`key=value` pairs separated by commas (OTEL_RESOURCE_ATTRIBUTES, OTLP headers): the SDK
    skips a malformed pair with a log line, so a header or attribute would silently vanish.
    Keys non-empty, no control character (a newline or NUL would split an HTTP header)."""

    def admit(self, value: Any) -> str:
        if not isinstance(value, str) or len(value) > 8_192 or not value.isprintable():
            raise Refused
        for pair in filter(str.strip, value.split(",")):
            key, equals, _ = pair.partition("=")
            if not equals or not key.strip():
                raise Refused
        return value

    def parse(self, text: str) -> str:
        return text

    def __str__(self) -> str:
        return "comma-separated key=value pairs of printable text"


class ReadableFile(Constraint):
    """The path of a file this process can read (a TLS certificate or key): the exporter would
    otherwise fail on its first export, long after start-up."""

    def admit(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip() or "\0" in value:
            raise Refused
        try:
            if not stat.S_ISREG(Path(value).stat().st_mode):
                raise Refused  # a FIFO would block the open below (and the start) until written
            with Path(value).open("rb"):
                return value
        except (OSError, ValueError):
            raise Refused from None

    def parse(self, text: str) -> str:
        return text

    def __str__(self) -> str:
        return "the path of a readable file"


MAX_BSP_VALUE = 2**31 - 1
DEFAULT_BSP_QUEUE_SIZE = 2048
"""The SDK's OTEL_BSP_MAX_QUEUE_SIZE when unset."""
ENDPOINT = URL(ascii_only=True)
TIMEOUT = Real(0.0, 3600.0, closed="right")
LIMIT = Integer(0, MAX_BSP_VALUE)
COMPRESSION = Options("gzip", "deflate", "none")
ENVIRONMENT: Constraints = {
    "OTEL_SDK_DISABLED": Boolean(),
    "OTEL_SERVICE_NAME": Text(max_chars=255),
    "OTEL_RESOURCE_ATTRIBUTES": KeyValues(),
    "OTEL_EXPORTER_OTLP_HEADERS": KeyValues(),
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS": KeyValues(),
    "OTEL_EXPORTER_OTLP_COMPRESSION": COMPRESSION,
    "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": COMPRESSION,
    "OTEL_EXPORTER_OTLP_INSECURE": Boolean(),
    "OTEL_EXPORTER_OTLP_TRACES_INSECURE": Boolean(),
    "OTEL_EXPORTER_OTLP_CERTIFICATE": ReadableFile(),
    "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": ReadableFile(),
    "OTEL_EXPORTER_OTLP_CLIENT_KEY": ReadableFile(),
    "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": ReadableFile(),
    "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": ReadableFile(),
    "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": ReadableFile(),
    "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": LIMIT,
    "OTEL_ATTRIBUTE_COUNT_LIMIT": LIMIT,
    "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": LIMIT,
    "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": LIMIT,
    "OTEL_SPAN_EVENT_COUNT_LIMIT": LIMIT,
    "OTEL_SPAN_LINK_COUNT_LIMIT": LIMIT,
    "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT": LIMIT,
    "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT": LIMIT,
    "OTEL_BSP_SCHEDULE_DELAY": Integer(1, MAX_BSP_VALUE),
    "OTEL_BSP_EXPORT_TIMEOUT": Integer(0, MAX_BSP_VALUE),
    "OTEL_BSP_MAX_QUEUE_SIZE": Integer(1, MAX_BSP_VALUE),
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": Integer(1, MAX_BSP_VALUE),
    "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT,
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ENDPOINT,
    "OTEL_EXPORTER_OTLP_TIMEOUT": TIMEOUT,
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": TIMEOUT,
}
"""The trace export's variables the SDK would refuse with a traceback (a span limit that is not
a non-negative integer), overflow on (the batch span processor's integers, in milliseconds and
spans), or silently ignore or replace (an endpoint it cannot reach, a timeout of seconds, a
malformed header or resource attribute, an unknown compression, a boolean other than
true/false, a certificate it cannot read), one row each; the sampler's are checked against the
installed samplers, and the batch size against the queue (`check_environment`)."""
RATIO_SAMPLERS = ("traceidratio", "parentbased_traceidratio")
"""The built-in samplers that read OTEL_TRACES_SAMPLER_ARG (the others ignore it)."""
SAMPLERS = ("always_on", "always_off", "traceidratio", "parentbased_always_on",
            "parentbased_always_off", "parentbased_traceidratio")
SAMPLER_RATIO = Real(0.0, 1.0)


def check_environment(environ: Mapping[str, str]) -> None:
    """ConfigError naming the first OTEL_* variable of the trace export the SDK would refuse,
    misread or silently replace (an integer, endpoint, timeout, sampler or ratio)."""
    for name, allowed in ENVIRONMENT.items():
        if name in environ:
            parse_text(environ[name], allowed, name)
    if "OTEL_BSP_MAX_EXPORT_BATCH_SIZE" in environ:
        batch = int(environ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"])
        queue = int(environ.get("OTEL_BSP_MAX_QUEUE_SIZE") or DEFAULT_BSP_QUEUE_SIZE)
        if batch > queue:
            raise ConfigError("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", f"{batch} exceeds the queue it "
                              f"is taken from (OTEL_BSP_MAX_QUEUE_SIZE, {queue}); lower it or "
                              "raise the queue")
    sampler = environ.get("OTEL_TRACES_SAMPLER")
    argument = environ.get("OTEL_TRACES_SAMPLER_ARG")
    if sampler is not None:
        from importlib.metadata import entry_points

        known = {*SAMPLERS, *(point.name for point in entry_points(group="opentelemetry_traces_sampler"))}
        check_value(sampler.strip().lower(), Options(*sorted(known)), "OTEL_TRACES_SAMPLER")
        if sampler.strip().lower() in RATIO_SAMPLERS and argument is not None:
            parse_text(argument, SAMPLER_RATIO, "OTEL_TRACES_SAMPLER_ARG")
    if argument is not None and (sampler or "parentbased_always_on").strip().lower() in SAMPLERS \
            and (sampler or "").strip().lower() not in RATIO_SAMPLERS:
        raise ConfigError("OTEL_TRACES_SAMPLER_ARG", f"is read only by the {' and '.join(RATIO_SAMPLERS)} "
                          f"samplers, not by {(sampler or 'the default parentbased_always_on')!r}; "
                          "set OTEL_TRACES_SAMPLER=parentbased_traceidratio or unset it")


def _exporter_class(name: str) -> type:
    from importlib.metadata import entry_points

    found = {point.name: point for point in entry_points(group=EXPORTER_GROUP)}
    if name not in found and name.startswith("otlp"):
        package = "opentelemetry-exporter-otlp-proto-" + ("grpc" if "grpc" in name else "http")
        raise MissingDependencyError(package, f"pip install {package}", f"the {name!r} trace exporter")
    check_value(name, Options(*sorted(found)), "OTEL_TRACES_EXPORTER",
                advice="name installed trace exporters, or 'none' alone for no export")
    return found[name].load()
