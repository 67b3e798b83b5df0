"""Hostile input to the routing server on a real loopback socket (issue 14, items 1, 2, 4, 10).

Bodies that crashed the server into a 500 must be a 400/413 with OpenAI's error shape; every
response, header and SSE event must be strict JSON even when the router's score is NaN; a client
that disconnects is logged once, without a traceback, and its pipeline stops at its next LLM
call. The property posts generated JSON and bytes and checks that no 500 and no non-strict JSON
comes back. pytest-timeout bounds every wait; nothing is timed.
"""

from __future__ import annotations

import json
import logging
import math
import socket
import threading
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")

from imad.errors import ConfigError  # noqa: E402
from imad.llm.scripted import ScriptedChat  # noqa: E402
from imad.serve import BackgroundServer, PipelineFactory, ServeSettings, create_app  # noqa: E402
from imad.serve.logs import LOGGER_NAME  # noqa: E402
from tests.router.router_helpers import make_router  # noqa: E402
from tests.support.nan_router import damaged_router  # noqa: E402
from tests.support.serving import BlockingChat, echo_factory, echo_respond, tagged_question  # noqa: E402

API_KEY = "hostile-key-0123456789"
AUTH = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
WAIT_S = 30  # an upper bound on waiting for an event, so a bug fails instead of hanging


def refuse_constant(name: str) -> None:
    raise AssertionError(f"{name} in the server's output is not strict JSON")


def strict_loads(text: str):
    return json.loads(text, parse_constant=refuse_constant)


class LogEvents(logging.Handler):
    """Keeps the server's log records and signals each event name as it is logged."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._seen: dict[str, threading.Event] = defaultdict(threading.Event)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self._seen[record.getMessage()].set()

    def wait_for(self, event: str) -> bool:
        return self._seen[event].wait(WAIT_S)

    def fields(self, event: str) -> list[dict]:
        return [getattr(r, "fields", {}) for r in self.records if r.getMessage() == event]


@pytest.fixture
def logs() -> Iterator[LogEvents]:
    logger = logging.getLogger(LOGGER_NAME)
    handler, level = LogEvents(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture
def serve() -> Iterator:
    """Start a loopback server around a factory; returns (server, app); stopped after the test."""
    servers: list[BackgroundServer] = []

    def start(factory=None, settings: ServeSettings | None = None):
        # in-thread scoring: a scoring process takes seconds to start (tests/serve covers it)
        settings = replace(settings or ServeSettings(api_key=API_KEY), scoring_processes=0)
        app = create_app(settings, factory or echo_factory())
        server = BackgroundServer(app, settings).start()
        servers.append(server)
        return server, app

    yield start
    for server in servers:
        server.stop(timeout_s=15)


def post(server: BackgroundServer, body: bytes | str) -> httpx.Response:
    content = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    return httpx.post(f"{server.base_url}/chat/completions", content=content, headers=AUTH, timeout=60)


def request_json(**fields) -> str:
    body = {"model": "imad-svrmad-0", "messages": [{"role": "user", "content": tagged_question(1)}]}
    return json.dumps({**body, **fields})


def with_raw(field: str, literal: str) -> str:
    return request_json(**{field: "@@"}).replace('"@@"', literal)


def long_choices(n: int, chars: int) -> str:
    words = "word " * (chars // 5)
    return request_json(imad={"choices": [f"{i} {words}" for i in range(n)]})


# (id, body, status, code, param) — every body got a 500 or a wrong 200 before issue 14's fix.
BODIES = [
    ("100,000 nested [ in messages", '{"model": "imad", "messages": ' + "[" * 100_000 + "}", 400,
     "invalid_json", None),
    ('"n": 1 followed by 5,000 zeros', with_raw("n", "1" + "0" * 5000), 400, "invalid_json", None),
    ("NaN literal in temperature", with_raw("temperature", "NaN"), 400, "invalid_json", None),
    ("-Infinity literal in max_tokens", with_raw("max_tokens", "-Infinity"), 400, "invalid_json", None),
    ('"stream": "yes"', with_raw("stream", '"yes"'), 400, "invalid_request", "stream"),
    ('"stream": 1', with_raw("stream", "1"), 400, "invalid_request", "stream"),
    ('"n": "1"', with_raw("n", '"1"'), 400, "invalid_request", "n"),
    ('"include_usage": "true"', with_raw("stream_options", '{"include_usage": "true"}'), 400,
     "invalid_request", "stream_options.include_usage"),
    # OpenAI answers 400 for stream_options on a request that does not stream (issue 34)
    ("stream_options without stream", request_json(stream_options={"include_usage": True}), 400,
     "invalid_request", "stream_options"),
    ("stream_options with stream false", request_json(stream=False, stream_options={}), 400,
     "invalid_request", "stream_options"),
    ("JSON escape of a lone surrogate in the question",
     '{"model": "imad", "messages": [{"role": "user", "content": "Which? \\ud800"}]}', 400,
     "invalid_question", "imad"),
    ("context of 2,000 words for a 1,000-word window", request_json(imad={"context": "word " * 2000}),
     413, "context_length_exceeded", "messages"),
    # the choices count towards --max-question-chars (issue 24): refused before the context check
    ("26 choices of 9,000 characters", long_choices(26, 9000), 413, "question_too_long",
     "messages.0.content"),
    ("repeated choices", request_json(imad={"choices": ["apple", "apple "]}), 400,
     "invalid_question", "imad"),
    # a key named twice is refused as `imad log label` refuses it, naming the key
    ("model named twice",
     '{"model": "imad-svrmad", "model": "imad", "messages": [{"role": "user", "content": "Which?"}]}',
     400, "invalid_json", "model"),
    ("content named twice in a message",
     '{"model": "imad", "messages": [{"role": "user", "content": "A?", "content": "B?"}]}',
     400, "invalid_json", "content"),
    ("choices on a numeric question", request_json(imad={"choices": ["1", "2"], "task_type": "numeric"}),
     400, "invalid_question", "imad"),
]


@pytest.mark.parametrize(("name", "body", "status", "code", "param"), BODIES, ids=[b[0] for b in BODIES])
def test_hostile_body_gets_a_typed_error(serve, logs, name, body, status, code, param):
    chat = ScriptedChat(echo_respond, context_window=1000)
    server, _ = serve(echo_factory(chat), ServeSettings(api_key=API_KEY, max_request_bytes=400_000))
    response = post(server, body)
    assert response.status_code == status, response.text
    error = strict_loads(response.text)["error"]
    assert (error["code"], error["param"]) == (code, param) and error["message"]
    assert chat.calls == []  # refused before any LLM call
    assert not [r for r in logs.records if r.exc_info]  # refused, not crashed


@pytest.mark.llm
def test_issue_reproduction_is_a_413_before_any_call_with_the_embedded_model(serve, logs, embedded_model):
    server, _ = serve(PipelineFactory(make_router(), embedded_model))
    body = request_json(model="imad-acemad-0", messages=[{"role": "user", "content": "Is it?"}],
                        imad={"task_type": "yes_no_maybe", "context": "word " * 3998})
    response = post(server, body)
    assert response.status_code == 413, response.text
    error = strict_loads(response.text)["error"]
    assert error["code"] == "context_length_exceeded"
    assert "the prompt is 4,185 tokens (llama.cpp's tokenizer)" in error["message"]
    [line] = logs.fields("chat_completion")
    assert line["status"] == 413 and not [r for r in logs.records if r.exc_info]


@pytest.mark.parametrize("stream", [False, True])
def test_non_finite_score_is_null_and_escalated_in_strict_json(serve, logs, stream):
    server, _ = serve(echo_factory(router=damaged_router()))
    response = post(server, request_json(stream=stream))
    assert response.status_code == 200, response.text
    header = strict_loads(response.headers["x-imad-decision"])
    assert header["p"] is None and header["escalated"] is True and header["source"] == "debate"
    if stream:
        events = [line.removeprefix("data: ") for line in response.text.splitlines() if line]
        infos = [strict_loads(e)["imad"] for e in events[:-1] if "imad" in strict_loads(e)]
        assert events[-1] == "[DONE]" and [info["p"] for info in infos] == [None]
    else:
        info = strict_loads(response.text)["imad"]
        assert info["p"] is None and info["escalated"] is True
        assert info["reasons"][0].startswith("router score is not finite (p nan, u ")
    [line] = logs.fields("chat_completion")
    assert line["status"] == 200 and line["p"] is None


def test_tau_zero_keeps_scored_answers_but_escalates_an_unparsed_one(serve):
    """imad-acemad-0: τ = 0 turns off the threshold, not the fail-safe rule (documented)."""
    import imad.serve.openai.model_names as model_names
    from tests.conftest import REPO_ROOT

    unparsed = ScriptedChat(lambda request: "I refuse to write JSON."
                            if "critique" in (request.json_schema or {}).get("properties", {})
                            else echo_respond(request))
    server, _ = serve(echo_factory(unparsed))
    info = strict_loads(post(server, request_json(model="imad-acemad-0")).text)["imad"]
    assert (info["tau"], info["parse_status"], info["escalated"], info["p"]) == (0.0, "unparsed", True, None)
    promise = "τ = 0 turns off the router's score threshold, not the fail-safe rule"
    assert promise in model_names.__doc__
    manual = (REPO_ROOT / "docs" / "reference" / "http-api.md").read_text(encoding="utf-8")
    assert "an unparsed self-critique still escalates" in manual


def test_client_gone_mid_body_is_one_log_line_without_traceback(serve, logs):
    server, app = serve()
    with socket.create_connection((server.host, server.port)) as raw:
        raw.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer "
                    + API_KEY.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
                    b"\r\n" + b'{"model": "imad", "messages": [')
    assert logs.wait_for("client_disconnected")
    [line] = logs.fields("client_disconnected")
    assert line["status"] == 499 and line["stage"] == "sending its request"
    assert not [r for r in logs.records if r.exc_info or getattr(r, "fields", {}).get("status") == 500]
    assert app.state.runner.in_flight == 0


def test_client_gone_during_the_pipeline_cancels_it_and_frees_its_slot(serve, logs):
    chat = BlockingChat()
    server, app = serve(echo_factory(chat))
    body = request_json(model="imad-svrmad-1").encode()  # τ 1: a debate would follow the first call
    with socket.create_connection((server.host, server.port)) as raw:
        raw.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer "
                    + API_KEY.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: "
                    + str(len(body)).encode() + b"\r\n\r\n" + body)
        assert chat.started.wait(WAIT_S)
    assert logs.wait_for("client_disconnected")
    assert logs.fields("client_disconnected")[0]["stage"] == "waiting for its answer"
    chat.release.set()  # the self-critique call ends; the next call must not happen
    assert logs.wait_for("pipeline_cancelled")
    assert len(chat.calls) == 1 and app.state.runner.in_flight == 0
    assert not [r for r in logs.records if r.exc_info]


@pytest.mark.parametrize(("field", "value"), [
    ("request_timeout_s", math.nan), ("request_timeout_s", math.inf), ("request_timeout_s", -1.0),
    ("shutdown_timeout_s", math.nan), ("default_tau", math.nan)])
def test_non_finite_settings_are_refused_at_start_up(field, value):
    with pytest.raises(ConfigError, match="must be"):
        ServeSettings(**{field: value})


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30),
    lambda children: (st.lists(children, max_size=4)
                      | st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=12)
FIELDS = st.sampled_from(["model", "messages", "stream", "n", "imad", "stream_options", "temperature"])
BODIES_ANY = st.one_of(
    st.binary(max_size=200),
    JSON_VALUES.map(json.dumps),
    st.builds(lambda field, value: request_json(**{field: value}), FIELDS, JSON_VALUES),
    st.builds(lambda field, literal: with_raw(field, literal), FIELDS,
              st.sampled_from(["NaN", "Infinity", "1" + "0" * 4400, "[" * 5000, '"\\udc80"', "true"])),
)


def test_property_no_body_gives_a_500_or_non_strict_json(serve, logs):
    server, _ = serve()

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(body=BODIES_ANY)
    def check(body):
        response = post(server, body)
        assert response.status_code < 500, response.text
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            events = [line.removeprefix("data: ") for line in response.text.splitlines() if line]
            assert events[-1] == "[DONE]"
            for event in events[:-1]:  # every chunk is strict JSON, p finite or null
                info = strict_loads(event).get("imad")
                assert info is None or info["p"] is None or math.isfinite(info["p"])
            return
        data = strict_loads(response.text)
        if response.status_code >= 400:
            assert set(data["error"]) == {"message", "type", "param", "code"}
        else:
            assert data["imad"]["p"] is None or math.isfinite(data["imad"]["p"])

    check()
    assert not [r for r in logs.records if r.exc_info]


@pytest.mark.parametrize("path", ["/v1/imad/feedback", "/v1/imad/admin/reload"])
def test_client_gone_mid_body_of_another_endpoint_is_one_log_line_without_traceback(serve, logs, path):
    """Before the fix, uvicorn logged 'Exception in ASGI application' with a ClientDisconnect
    traceback for these endpoints (only the chat endpoint caught it)."""
    uvicorn_logger = logging.getLogger("uvicorn.error")
    uvicorn_logs = LogEvents()
    uvicorn_logger.addHandler(uvicorn_logs)
    try:
        server, _ = serve()
        with socket.create_connection((server.host, server.port)) as raw:
            raw.sendall(f"POST {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {API_KEY}\r\n"
                        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"id\": ".encode())
        assert logs.wait_for("client_disconnected")
        [line] = logs.fields("client_disconnected")
        assert line == {"path": path, "status": 499, "stage": "sending its request"}
        server.stop(timeout_s=15)  # every record of the request is in
    finally:
        uvicorn_logger.removeHandler(uvicorn_logs)
    assert not [r for r in logs.records + uvicorn_logs.records if r.exc_info]


MALFORMED_HTTP = [  # (id, request head); h11 refuses each before the app sees it
    ("Content-Length -1", b"Content-Length: -1\r\n"),
    ("Content-Length +5", b"Content-Length: +5\r\n"),
    ("Content-Length of 23 digits", b"Content-Length: 99999999999999999999999\r\n"),
    ("Content-Length in Arabic-Indic digits", "Content-Length: \u0661\u0662\r\n".encode()),
    ("two Content-Lengths", b"Content-Length: 3\r\nContent-Length: 25\r\n"),
]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/imad/feedback", "/v1/imad/admin/reload"])
@pytest.mark.parametrize("head", [row[1] for row in MALFORMED_HTTP], ids=[row[0] for row in MALFORMED_HTTP])
def test_malformed_http_framing_is_a_json_400(serve, path, head):
    """Before: uvicorn's plain-text 'Invalid HTTP request received.'."""
    server, _ = serve()
    with socket.create_connection((server.host, server.port), timeout=WAIT_S) as raw:
        raw.sendall(f"POST {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {API_KEY}\r\n".encode()
                    + head + b"\r\n" + b'{"id": "x", "correct": true}')
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert status_line == b"HTTP/1.1 400 Bad Request"
    assert b"content-type: application/json" in headers.lower()
    error = strict_loads(body)["error"]
    assert error["code"] == "invalid_http" and error["type"] == "invalid_request_error"
    assert "not valid HTTP/1.1" in error["message"]


def test_a_request_without_host_is_a_json_400(serve):
    server, _ = serve()
    with socket.create_connection((server.host, server.port), timeout=WAIT_S) as raw:
        raw.sendall(b"GET /health HTTP/1.1\r\n\r\n")
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert strict_loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == "invalid_http"
