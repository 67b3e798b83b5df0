"""Upstream model-server failures: killed mid-request → 502, hung → 504, and the server goes on.

The pipeline's model is a real `openai:` spec pointing at a tiny stdlib HTTP server on loopback
that either answers like an OpenAI server (with the echo model's replies) or holds the request
open until it is killed — its sockets shut down under the waiting client.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading

import openai
import pytest

from imad.errors import LLMConnectionError, LLMRateLimitError, LLMServerError, LLMTimeoutError
from imad.llm.spec import chat_model_from_spec
from imad.llm.types import ChatRequest, Message
from imad.serve import PipelineFactory, ServeSettings
from imad.serve.upstream import UpstreamWatch, upstream_failure
from tests.router.router_helpers import make_router
from tests.support.serving import SMALL_DEBATES, echo_respond, tagged_question


class FakeUpstream:
    """An OpenAI-style server on loopback. mode "answer": echo replies; "hold": never answer."""

    def __init__(self, mode: str, port: int = 0) -> None:
        self.mode = mode
        self.arrived = threading.Event()
        self.killed = threading.Event()
        self.connections: list[socket.socket] = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def kill(self) -> None:
        """Stop listening and cut every open connection, as a crashed server would."""
        self.killed.set()
        self._server.shutdown()
        self._server.server_close()
        for connection in self.connections:
            with contextlib.suppress(OSError):  # already closed by its client
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        upstream = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                upstream.connections.append(self.connection)
                upstream.arrived.set()
                if upstream.mode == "hold":
                    upstream.killed.wait(30)
                    self.close_connection = True
                    return
                request = ChatRequest(tuple(Message(m["role"], m["content"]) for m in body["messages"]))
                text = echo_respond(request)
                reply = json.dumps({"id": "x", "object": "chat.completion", "model": body["model"],
                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": text}}],
                                    "usage": {"prompt_tokens": 11, "completion_tokens": 7}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        return Handler


def http_factory(url: str, timeout_s: float = 30.0) -> PipelineFactory:
    model = chat_model_from_spec(f"openai:fake@{url}?max_retries=0&timeout={timeout_s}")
    return PipelineFactory(make_router(), model, SMALL_DEBATES)


def ask(client: openai.OpenAI, index: int):
    return client.chat.completions.create(model="imad-svrmad-0",
                                          messages=[{"role": "user", "content": tagged_question(index)}])


def test_killed_upstream_is_a_502_and_the_server_keeps_serving(start_server, client_for):
    upstream = FakeUpstream("hold")
    client = client_for(start_server(ServeSettings(), http_factory(upstream.url)))
    outcome: dict = {}

    def call() -> None:
        try:
            ask(client, 1)
        except openai.APIStatusError as error:
            outcome["error"] = error

    worker = threading.Thread(target=call)
    worker.start()
    assert upstream.arrived.wait(20)
    upstream.kill()  # mid-request: the self-critique call is waiting for its answer
    worker.join(30)
    error = outcome["error"]
    assert error.status_code == 502 and error.code == "upstream_failed"
    assert "upstream model server failed" in error.message and "LLMConnectionError" in error.message
    assert f"127.0.0.1:{upstream.port}" in error.message

    FakeUpstream("answer", port=upstream.port)  # the model server comes back on its port
    completion = ask(client, 42)
    assert completion.choices[0].message.content == "42"
    assert completion.usage.prompt_tokens == 11 and completion.usage.completion_tokens == 7


def test_hung_upstream_is_a_504_and_the_server_keeps_serving(start_server, client_for):
    upstream = FakeUpstream("hold")
    try:
        client = client_for(start_server(ServeSettings(), http_factory(upstream.url, timeout_s=0.5)))
        with pytest.raises(openai.APIStatusError) as caught:
            ask(client, 1)
        assert caught.value.status_code == 504 and caught.value.code == "upstream_timeout"
        assert "timed out" in caught.value.message and "LLMTimeoutError" in caught.value.message
        upstream.mode = "answer"
        assert ask(client, 9).choices[0].message.content == "9"
    finally:
        upstream.kill()


@pytest.mark.parametrize(("error", "status", "code"), [
    (LLMTimeoutError("slow"), 504, "upstream_timeout"),
    (LLMConnectionError("refused"), 502, "upstream_failed"),
    (LLMServerError("HTTP 500"), 502, "upstream_failed"),
    (LLMRateLimitError("HTTP 429", retry_after=2.5), 429, "upstream_rate_limited"),
])
def test_upstream_failure_maps_the_first_error(error, status, code):
    failure = upstream_failure([error, LLMConnectionError("later")])
    assert (failure.status, failure.code) == (status, code)
    assert type(error).__name__ in failure.message and "1 more failed call" in failure.message
    if status == 429:
        assert failure.headers["Retry-After"] == "3"
    assert upstream_failure([]) is None


def test_watch_records_failed_calls_of_single_and_batched_requests():
    class Failing:
        model_id, supports_json_schema, supports_logprobs = "failing", True, False

        def __init__(self):
            self.failures = [LLMConnectionError("down"), LLMServerError("HTTP 503"),
                             LLMServerError("HTTP 503")]

        def chat(self, request):
            raise self.failures.pop(0)

    calls = []
    watch = UpstreamWatch(Failing(), on_call=lambda seconds, error: calls.append(type(error)))
    request = ChatRequest((Message("user", "hi"),))
    with pytest.raises(LLMConnectionError):
        watch.chat(request)
    # a batch goes call by call through `chat`, so each call is timed and recorded
    assert [type(r) for r in watch.chat_batch([request, request])] == [LLMServerError, LLMServerError]
    assert [type(e) for e in watch.errors] == [LLMConnectionError, LLMServerError, LLMServerError]
    assert calls == [LLMConnectionError, LLMServerError, LLMServerError]


def test_the_upstream_client_follows_the_servers_concurrency_unless_the_spec_sets_it():
    from imad.serve.upstream import spec_with_concurrency

    assert spec_with_concurrency("openai:m@http://h/v1", 32) == "openai:m@http://h/v1?max_concurrency=32"
    assert (spec_with_concurrency("openai:m?timeout=5", 8) == "openai:m?timeout=5&max_concurrency=8")
    assert spec_with_concurrency("openai:m?max_concurrency=2", 32) == "openai:m?max_concurrency=2"
    assert (spec_with_concurrency("cached:c.sqlite::openai:m", 16)
            == "cached:c.sqlite::openai:m?max_concurrency=16")
    assert spec_with_concurrency("local", 32) == "local"
    from imad.llm.spec import chat_model_from_spec
    from imad.serve.upstream import upstream_concurrency

    assert upstream_concurrency(chat_model_from_spec(spec_with_concurrency("openai:m@http://h/v1", 32))) == 32
