"""OpenTelemetry spans of an answer (issue 20, item 5), read back from the SDK's in-memory exporter.

Each test sets a real SDK TracerProvider globally for itself and removes it after (the API lets a
provider be set once per process; the reset is the one opentelemetry's own test utilities do),
so the rest of the suite runs with tracing off.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402
from opentelemetry.util._once import Once  # noqa: E402

from imad import tracing  # noqa: E402
from imad.decide.policy import FixedThreshold  # noqa: E402
from imad.llm.scripted import ScriptedChat  # noqa: E402
from imad.pipeline import Pipeline  # noqa: E402
from tests.router.router_helpers import make_router  # noqa: E402
from tests.support.serving import SMALL_DEBATES, echo_factory, echo_respond, tagged_question  # noqa: E402


def _reset_global_provider() -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _reset_global_provider()
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()
    _reset_global_provider()


def by_name(finished, name):
    return [span for span in finished if span.name == name]


def one(finished, name):
    found = by_name(finished, name)
    assert len(found) == 1, [span.name for span in finished]
    return found[0]


def parent_of(span):
    return None if span.parent is None else span.parent.span_id


def disagreeing(request):
    """The echo model, except that debate agents answer their call's seed: no early consensus."""
    text = echo_respond(request)
    if "critique" in (request.json_schema or {}).get("properties", {}):
        return text
    return json.dumps({**json.loads(text), "answer": str(request.seed % 7)})


def pipeline(tau: float) -> Pipeline:
    return Pipeline(make_router(), ScriptedChat(disagreeing), "acemad", policy=FixedThreshold(tau),
                    backend_options={"n_agents": 3, "n_rounds": 2})


def test_a_kept_answer_is_an_answer_span_with_critique_features_and_decision(spans):
    result = pipeline(tau=0.0).answer(tagged_question(7))
    finished = spans.get_finished_spans()
    assert sorted(span.name for span in finished) == ["chat scripted", "imad.answer", "imad.decision",
                                                      "imad.features"]
    answer, chat = one(finished, "imad.answer"), one(finished, "chat scripted")
    decision, features = one(finished, "imad.decision"), one(finished, "imad.features")
    assert answer.parent is None
    assert parent_of(chat) == parent_of(decision) == answer.context.span_id
    assert parent_of(features) == decision.context.span_id
    assert {span.context.trace_id for span in finished} == {answer.context.trace_id}

    critique = result.critique
    assert chat.kind == trace.SpanKind.CLIENT
    assert dict(chat.attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "imad.scripted",
        "gen_ai.request.model": "scripted", "gen_ai.request.max_tokens": 512,
        "gen_ai.request.temperature": 0.0, "gen_ai.request.seed": 0, "imad.stage": "self_critique",
        "gen_ai.usage.input_tokens": critique.prompt_tokens,
        "gen_ai.usage.output_tokens": critique.completion_tokens,
        "gen_ai.response.model": "scripted", "gen_ai.response.finish_reasons": ("stop",),
        "imad.critique.status": "ok", "imad.critique.confidence_source": "verbal"}
    assert critique.prompt_tokens > 0 and critique.completion_tokens > 0

    made = result.decision
    assert dict(decision.attributes) == {
        "imad.router.p": made.p, "imad.router.tau": 0.0, "imad.router.tau_source": "request",
        "imad.router.ood_policy": made.ood_policy, "imad.router.escalate": False,
        "imad.router.outcome": "kept", "imad.router.score_status": "scored",
        "imad.router.parse_status": "parsed",
        **({} if made.ood is None else {"imad.router.ood": made.ood,
                                        "imad.router.ood_score": made.ood_score})}
    assert 0.0 < made.p < 1.0
    assert dict(features.attributes) == {"imad.features.schema_version": make_router().feature_schema_version,
                                         "imad.features.count": 41}
    assert dict(answer.attributes) == {
        "imad.question.id": result.question.id, "imad.answer.source": "single_agent",
        "imad.escalated": False, "imad.llm_calls": 1,
        "gen_ai.usage.input_tokens": critique.prompt_tokens,
        "gen_ai.usage.output_tokens": critique.completion_tokens}
    assert all(span.status.status_code == StatusCode.UNSET for span in finished)


def test_an_escalated_answer_has_a_debate_span_with_one_span_per_round(spans):
    result = pipeline(tau=1.0).answer(tagged_question(3))
    # the agents never agree, so the debate ends without an answer and the self-critique's is
    # served, the reason recorded (issue 33: `imad ask` and `imad serve` agree on it)
    assert result.debate is not None and result.debate.final_answer == ""
    assert (result.source, result.answer) == ("single_agent_fallback", "3")
    assert result.error == "the debate gave no answer (acemad: rounds_done)"
    finished = spans.get_finished_spans()
    answer, debate = one(finished, "imad.answer"), one(finished, "imad.debate")
    decision = one(finished, "imad.decision")
    assert decision.attributes["imad.router.outcome"] == "below_tau"
    assert decision.attributes["imad.router.escalate"] is True
    assert parent_of(debate) == answer.context.span_id

    calls = result.debate.trace
    rounds = by_name(finished, "imad.debate.round")
    assert [span.attributes["imad.debate.round"] for span in rounds] == sorted({c.round for c in calls})
    assert len(rounds) >= 2
    for span in rounds:
        number = span.attributes["imad.debate.round"]
        in_round = [c for c in calls if c.round == number]
        assert parent_of(span) == debate.context.span_id
        assert span.attributes["imad.debate.backend"] == "acemad"
        assert list(span.attributes["imad.debate.agents"]) == sorted({c.agent for c in in_round})
        assert span.attributes["imad.debate.calls"] == len(in_round)
        assert span.attributes["gen_ai.usage.input_tokens"] == sum(c.prompt_tokens for c in in_round)
        assert span.attributes["gen_ai.usage.output_tokens"] == sum(c.completion_tokens for c in in_round)
        chats = [s for s in finished if parent_of(s) == span.context.span_id]
        assert sorted(s.attributes["imad.debate.agent"] for s in chats) == sorted(c.agent for c in in_round)
        assert all(s.name == "chat scripted" and s.attributes["imad.stage"] == "debate" for s in chats)
    assert debate.attributes["imad.debate.calls"] == len(calls)
    assert debate.attributes["imad.debate.rounds"] == len(result.debate.rounds)
    assert debate.attributes["gen_ai.usage.output_tokens"] == result.debate.completion_tokens
    assert answer.attributes["gen_ai.usage.input_tokens"] == result.prompt_tokens
    assert answer.attributes["imad.llm_calls"] == 1 + len(calls)


def test_a_failed_critique_call_marks_its_span_as_an_error_without_its_message(spans):
    from imad.errors import LLMTimeoutError

    def fail(request):
        raise LLMTimeoutError("secret prompt text would be here")

    Pipeline(make_router(), ScriptedChat(fail), "acemad", policy=FixedThreshold(0.0),
             backend_options=SMALL_DEBATES["acemad"]).answer("Is it late?")
    finished = spans.get_finished_spans()
    chat = by_name(finished, "chat scripted")[0]
    assert chat.status.status_code == StatusCode.ERROR
    assert chat.attributes["error.type"] == "LLMTimeoutError"
    assert chat.attributes["imad.critique.status"] == "llm_error"
    assert one(finished, "imad.decision").attributes["imad.router.outcome"] == "unparsed"
    exported = json.dumps([json.loads(span.to_json()) for span in finished])
    assert "secret prompt" not in exported and "Is it late" not in exported


def test_the_server_request_span_parents_the_pipeline_spans_across_the_worker_thread(spans):
    from imad.serve import BackgroundServer, ServeSettings, create_app

    settings = ServeSettings(api_key="k" * 16, scoring_processes=0)  # spans cross a thread, not a process
    with BackgroundServer(create_app(settings, echo_factory()), settings) as server:
        response = httpx.post(f"{server.base_url}/chat/completions", timeout=60,
                              headers={"Authorization": "Bearer " + "k" * 16},
                              json={"model": "imad-acemad-1",
                                    "messages": [{"role": "user", "content": tagged_question(5)}]})
    assert response.status_code == 200
    request = one(spans.get_finished_spans(), "imad.request")
    # the server's warm-up decision (before any request) is a trace of its own
    finished = [s for s in spans.get_finished_spans() if s.context.trace_id == request.context.trace_id]
    assert dict(request.attributes) == {"gen_ai.request.model": "imad-acemad-1",
                                        "imad.request_id": response.headers["X-Request-Id"],
                                        "http.response.status_code": 200}
    answer = one(finished, "imad.answer")
    assert parent_of(answer) == request.context.span_id
    names = {s.name for s in finished}
    assert {"chat scripted", "imad.answer", "imad.decision", "imad.features", "imad.debate"} <= names
    assert one(finished, "imad.decision").attributes["imad.router.tau"] == 1.0
    assert by_name(finished, "imad.debate.round")  # τ 1 escalates: the rounds ran in the worker
    features = one(finished, "imad.features")
    assert features.attributes["imad.features.batch_size"] == 1


_NO_OTEL = """
import sys
for name in ("opentelemetry", "opentelemetry.trace", "opentelemetry.sdk"):
    sys.modules[name] = None
import imad
from imad.pipeline import Pipeline
from imad.decide.policy import FixedThreshold
from imad import tracing
from tests.router.router_helpers import make_router
from tests.support.serving import SMALL_DEBATES, echo_chat
result = Pipeline(make_router(), echo_chat(), "acemad", policy=FixedThreshold(1.0),
                  backend_options=SMALL_DEBATES["acemad"]).answer("Which number is tagged #4?")
assert tracing.span("x") is tracing.NO_SPAN
print(result.source, result.answer, tracing.configure_from_environment({}))
"""

_NOTHING_IMPORTED = """
import sys
import imad, imad.cli.ask, imad.cli.main
from imad.pipeline import Pipeline
from imad.decide.policy import FixedThreshold
from tests.router.router_helpers import make_router
from tests.support.serving import echo_chat
Pipeline(make_router(), echo_chat(), "cot", policy=FixedThreshold(0.0)).answer("Which number is tagged #2?")
print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))
"""


def test_without_opentelemetry_the_pipeline_works_and_tracing_is_off():
    result = subprocess.run([sys.executable, "-c", _NO_OTEL], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["debate", "4", "False"]


def test_imad_and_its_pipeline_import_no_opentelemetry_module():
    result = subprocess.run([sys.executable, "-c", _NOTHING_IMPORTED], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


def test_tracing_is_off_with_the_api_s_default_provider():
    _reset_global_provider()
    assert tracing.tracer() is None and tracing.span("x") is tracing.NO_SPAN


class _Collector:
    """A loopback OTLP/HTTP receiver: keeps the body of every POST to /v1/traces."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.bodies: list[bytes] = []
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/v1/traces":
                    collector.bodies.append(body)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[tuple[str, str, dict]]:
        """(service name, span name, attributes) of every span received."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        found = []
        for body in self.bodies:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        attributes = {a.key: a.value for a in span.attributes}
                        found.append((service, span.name, attributes))
        return found


@pytest.mark.slow
def test_imad_serve_exports_its_spans_by_otlp_to_the_endpoint_in_the_environment(tmp_path):
    """A real `imad serve` process configured only by OTEL_* variables, a real OTLP receiver."""
    import os
    import signal
    import time

    from imad.critique.call import SelfCritique
    from imad.llm.cache import CachedChat
    from imad.question import Question
    from tests.conftest import REPO_ROOT
    from tests.support.servers import free_port

    cache = CachedChat(ScriptedChat(echo_respond, model_id="echo"), tmp_path / "calls.sqlite")
    assert SelfCritique(cache).run(Question(tagged_question(5))).ok
    cache.close()
    router = make_router().save(tmp_path / "router")
    collector = _Collector()
    collector.thread.start()
    port = free_port()
    command = [sys.executable, "-m", "imad.cli.main", "serve", "--router", str(router), "--llm",
               f"cached:{tmp_path / 'calls.sqlite'}::openai:echo@http://127.0.0.1:9/v1?max_retries=0",
               "--tau", "0", "--port", str(port)]
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
           "OTEL_SERVICE_NAME": "imad-otlp-test", "OTEL_BSP_SCHEDULE_DELAY": "100"}
    env.pop("OTEL_TRACES_EXPORTER", None)
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.stderr.read()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "imad serve did not start within 120 s"
            time.sleep(0.2)
        response = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=60,
                              json={"model": "imad", "messages": [{"role": "user",
                                                                   "content": tagged_question(5)}]})
        assert response.status_code == 200, response.text
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)  # the provider flushes its batch at exit
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        collector.server.shutdown()
    received = collector.spans()
    assert {service for service, _, _ in received} == {"imad-otlp-test"}
    names = [name for _, name, _ in received]
    for expected in ("imad.request", "imad.answer", "chat echo", "imad.features"):
        assert expected in names, names
    [request] = [attributes for _, name, attributes in received if name == "imad.request"]
    assert request["imad.request_id"].string_value == response.headers["X-Request-Id"]
    assert request["http.response.status_code"].int_value == 200
    [chat] = [attributes for _, name, attributes in received if name == "chat echo"]
    assert chat["gen_ai.provider.name"].string_value == "openai"
    assert chat["gen_ai.operation.name"].string_value == "chat"
