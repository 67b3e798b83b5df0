"""Hostile OTEL_* environment variables for `imad serve`'s trace export (imad.tracing).

Every value the SDK would refuse with a traceback, overflow on, or silently replace is a
ConfigError naming the variable; `imad serve` shows it as one `error:` line and exits 2 before
binding a port. Values that ask for no export leave tracing off.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("opentelemetry.sdk")

from imad import tracing  # noqa: E402
from imad.errors import ConfigError, MissingDependencyError  # noqa: E402

OTLP = {"OTEL_TRACES_EXPORTER": "otlp"}

REFUSED = [
    ({"OTEL_TRACES_EXPORTER": "bogus"}, "OTEL_TRACES_EXPORTER"),
    ({"OTEL_TRACES_EXPORTER": "console,bogus"}, "OTEL_TRACES_EXPORTER"),
    ({"OTEL_TRACES_EXPORTER": "\ud800"}, "OTEL_TRACES_EXPORTER"),
    ({"OTEL_TRACES_EXPORTER": "x" * 100_000}, "OTEL_TRACES_EXPORTER"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "json"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
    ({**OTLP, "OTEL_BSP_SCHEDULE_DELAY": "1e999"}, "OTEL_BSP_SCHEDULE_DELAY"),
    ({**OTLP, "OTEL_BSP_SCHEDULE_DELAY": "nan"}, "OTEL_BSP_SCHEDULE_DELAY"),
    ({**OTLP, "OTEL_BSP_SCHEDULE_DELAY": "0"}, "OTEL_BSP_SCHEDULE_DELAY"),
    ({**OTLP, "OTEL_BSP_MAX_QUEUE_SIZE": "9" * 400}, "OTEL_BSP_MAX_QUEUE_SIZE"),
    ({**OTLP, "OTEL_BSP_MAX_QUEUE_SIZE": "-3"}, "OTEL_BSP_MAX_QUEUE_SIZE"),
    ({**OTLP, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "١٢"}, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
    ({**OTLP, "OTEL_BSP_EXPORT_TIMEOUT": ""}, "OTEL_BSP_EXPORT_TIMEOUT"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "not a url"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://[::1"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "file:///etc/passwd"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h\ud800st:4318"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_TIMEOUT": "1e999"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_TIMEOUT": "NaN"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "-1"}, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"),
    ({**OTLP, "OTEL_TRACES_SAMPLER": "bogus"}, "OTEL_TRACES_SAMPLER"),
    ({**OTLP, "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "nan"},
     "OTEL_TRACES_SAMPLER_ARG"),
    ({**OTLP, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1e999"},
     "OTEL_TRACES_SAMPLER_ARG"),
]


@pytest.mark.parametrize(("environ", "variable"), REFUSED, ids=[v for _, v in REFUSED])
def test_a_bad_variable_is_a_config_error_naming_it(environ, variable):
    with pytest.raises(ConfigError) as caught:
        tracing.provider_from_environment(environ)
    assert caught.value.field == variable
    assert len(str(caught.value)) < 600


@pytest.mark.parametrize("environ", [
    {},
    {"OTEL_TRACES_EXPORTER": "none"},
    {"OTEL_TRACES_EXPORTER": " NONE "},
    {"OTEL_TRACES_EXPORTER": ""},
    {"OTEL_TRACES_EXPORTER": "bogus", "OTEL_SDK_DISABLED": "true"},
    {"OTEL_SERVICE_NAME": "imad", "OTEL_BSP_SCHEDULE_DELAY": "1e999"},  # no exporter asked for
])
def test_no_export_asked_for_leaves_tracing_off(environ):
    assert tracing.provider_from_environment(environ) is None


def test_grpc_without_its_exporter_names_the_package():
    with pytest.raises(MissingDependencyError, match=r"pip install opentelemetry-exporter-otlp-proto-grpc"):
        tracing.provider_from_environment({**OTLP, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})


def test_an_endpoint_alone_means_otlp_over_http():
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert tracing.exporter_names(endpoint) == ["otlp_proto_http"]
    assert tracing.exporter_names({"OTEL_TRACES_EXPORTER": "console, otlp"}) == ["console", "otlp_proto_http"]
    provider = tracing.provider_from_environment({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
                                                  "OTEL_BSP_MAX_QUEUE_SIZE": "2147483647"})
    try:
        processors = provider._active_span_processor._span_processors
        assert [type(p._batch_processor._exporter).__name__ for p in processors] == ["OTLPSpanExporter"]
    finally:
        provider.shutdown()


@pytest.mark.parametrize(("variable", "value"), [("OTEL_TRACES_EXPORTER", "bogus"),
                                                  ("OTEL_BSP_MAX_QUEUE_SIZE", "9" * 50),
                                                  ("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x")])
def test_imad_serve_with_a_bad_variable_is_one_error_line_and_exit_2(variable, value):
    environ = {**os.environ, "OTEL_TRACES_EXPORTER": "otlp", variable: value}
    result = subprocess.run([sys.executable, "-m", "imad.cli.main", "serve", "--llm", "local", "--port", "0"],
                            capture_output=True, text=True, timeout=120, env=environ)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.startswith(f"imad serve: error: {variable}: ") and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1
