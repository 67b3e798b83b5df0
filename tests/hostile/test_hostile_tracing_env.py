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
    # issue 34: values the SDK refused with a traceback (exit 3) or ignored silently
    ({**OTLP, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "600", "OTEL_BSP_MAX_QUEUE_SIZE": "500"},
     "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
    ({**OTLP, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4096"}, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),  # > 2048
    ({**OTLP, "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "abc"}, "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT"),
    ({**OTLP, "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "-5"}, "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"),
    ({**OTLP, "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "2.5"}, "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"),
    ({**OTLP, "OTEL_ATTRIBUTE_COUNT_LIMIT": "9" * 40}, "OTEL_ATTRIBUTE_COUNT_LIMIT"),
    ({**OTLP, "OTEL_SPAN_EVENT_COUNT_LIMIT": "-1"}, "OTEL_SPAN_EVENT_COUNT_LIMIT"),
    ({**OTLP, "OTEL_SPAN_LINK_COUNT_LIMIT": "nan"}, "OTEL_SPAN_LINK_COUNT_LIMIT"),
    ({**OTLP, "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT": "1e3"}, "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT"),
    ({**OTLP, "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT": "١"}, "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT"),
    ({**OTLP, "OTEL_SDK_DISABLED": "yes"}, "OTEL_SDK_DISABLED"),
    ({**OTLP, "OTEL_SERVICE_NAME": "   "}, "OTEL_SERVICE_NAME"),
    ({**OTLP, "OTEL_RESOURCE_ATTRIBUTES": "team=search,oops"}, "OTEL_RESOURCE_ATTRIBUTES"),
    ({**OTLP, "OTEL_RESOURCE_ATTRIBUTES": "=value"}, "OTEL_RESOURCE_ATTRIBUTES"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a\nX-Injected: 1"}, "OTEL_EXPORTER_OTLP_HEADERS"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key=a\0b"}, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_HEADERS": "no-equals-sign"}, "OTEL_EXPORTER_OTLP_HEADERS"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_COMPRESSION": "brotli"}, "OTEL_EXPORTER_OTLP_COMPRESSION"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "GZIP!"}, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_INSECURE": "maybe"}, "OTEL_EXPORTER_OTLP_INSECURE"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "1"}, "OTEL_EXPORTER_OTLP_TRACES_INSECURE"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, "OTEL_EXPORTER_OTLP_CERTIFICATE"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": "/"}, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY"),
    ({**OTLP, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "a\0b"}, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"),
    ({**OTLP, "OTEL_TRACES_SAMPLER": "always_on", "OTEL_TRACES_SAMPLER_ARG": "0.5"},
     "OTEL_TRACES_SAMPLER_ARG"),
    ({**OTLP, "OTEL_TRACES_SAMPLER_ARG": "0.5"}, "OTEL_TRACES_SAMPLER_ARG"),  # default sampler
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


@pytest.mark.parametrize("environ", [
    {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "500", "OTEL_BSP_MAX_QUEUE_SIZE": "500"},
    {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2048"},
    {"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "0", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "4096"},
    {"OTEL_SDK_DISABLED": "False", "OTEL_SERVICE_NAME": "imad-router"},
    {"OTEL_RESOURCE_ATTRIBUTES": "team=search, region=eu", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b"},
    {"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_INSECURE": "TRUE"},
    {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
])
def test_good_values_of_the_checked_variables_configure_export(environ):
    provider = tracing.provider_from_environment({"OTEL_TRACES_EXPORTER": "console", **environ})
    try:
        assert provider is not None
    finally:
        provider.shutdown()


def test_a_certificate_must_be_a_readable_file(tmp_path):
    certificate = tmp_path / "ca.pem"
    certificate.write_text("-----BEGIN CERTIFICATE-----\n")
    tracing.check_environment({"OTEL_EXPORTER_OTLP_CERTIFICATE": str(certificate)})
    with pytest.raises(ConfigError, match="readable file"):
        tracing.check_environment({"OTEL_EXPORTER_OTLP_CERTIFICATE": str(tmp_path)})


@pytest.mark.timeout(60)  # opening a FIFO blocked until a writer came: the server never started
@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_CERTIFICATE",
                                      "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY"])
def test_a_certificate_that_is_a_fifo_is_refused_at_once(tmp_path, variable):
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="readable file") as caught:
        tracing.check_environment({variable: str(fifo)})
    assert caught.value.field == variable


PROPAGATORS = [  # (value, refused name or None); the API imported by FastAPI raised ValueError
    ("bogus", "'bogus'"),
    ("B3", "'B3'"),
    ("tracecontext,,baggage", "''"),
    ("tracecontext, jaeger", "'jaeger'"),
    ("x" * 10_000, "'" + "x" * 80 + "…'"),
    ("none,bogus", None),  # the API stops at none
    (" tracecontext , baggage ", None),
    ("", None),
]


@pytest.mark.parametrize(("value", "refused"), PROPAGATORS, ids=[v[:20] or "empty" for v, _ in PROPAGATORS])
def test_otel_propagators_names_installed_propagators_export_or_not(value, refused):
    environ = {"OTEL_TRACES_EXPORTER": "none", "OTEL_PROPAGATORS": value}
    if refused is None:
        tracing.check_propagators(environ)
        return
    with pytest.raises(ConfigError) as caught:
        tracing.configure_from_environment(environ)
    message = str(caught.value)
    assert caught.value.field == "OTEL_PROPAGATORS" and f"{refused} is no installed propagator" in message
    assert "baggage, tracecontext" in message and len(message) < 600


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
                                                  ("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x"),
                                                  ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096"),
                                                  ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "abc"),
                                                  ("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "-5"),
                                                  ("OTEL_PROPAGATORS", "bogus")])
def test_imad_serve_with_a_bad_variable_is_one_error_line_and_exit_2(variable, value):
    environ = {**os.environ, "OTEL_TRACES_EXPORTER": "otlp", variable: value}
    result = subprocess.run([sys.executable, "-m", "imad.cli.main", "serve", "--llm", "local", "--port", "0"],
                            capture_output=True, text=True, timeout=120, env=environ)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.startswith(f"imad serve: error: {variable}: ") and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1
