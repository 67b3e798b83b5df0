"""`imad serve`'s trace export, configured by OpenTelemetry's standard environment variables.

`configure_from_environment()` (called by `imad serve` and each of its workers) installs an SDK
`TracerProvider` when the SDK is installed (`pip install 'imad[otel]'`), no provider is set yet,
`OTEL_SDK_DISABLED` is not true, and `OTEL_TRACES_EXPORTER` or an OTLP endpoint asks for export.
The SDK reads the rest itself (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, the sampler, the
batch processor, the exporter's endpoint and headers); the values it would refuse with a
traceback, overflow on or silently replace are checked first, as ConfigErrors naming them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

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
