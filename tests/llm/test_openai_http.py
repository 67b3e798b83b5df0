"""The HTTP client against a real llama.cpp server on loopback, directly and through faults."""

from __future__ import annotations

import pytest

from imad.errors import (
    LLMAuthError,
    LLMConnectionError,
    LLMMalformedResponseError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    TruncatedResponseError,
)
from imad.llm.openai_http import OpenAICompatibleChat
from imad.llm.types import ChatRequest, user_prompt
from tests.support.servers import FaultProxy, free_port

pytestmark = [pytest.mark.server, pytest.mark.slow]

SHORT = ChatRequest(user_prompt("Say hello."), max_tokens=16, temperature=0.0, seed=1,
                    json_schema={"type": "object", "properties": {"greeting": {"enum": ["hello"]}},
                                 "required": ["greeting"]})


def client(base_url: str, **overrides) -> OpenAICompatibleChat:
    options = {"model": "smollm2", "base_url": base_url, "timeout": 30.0, "max_retries": 2,
               "backoff_base": 0.05, "structured_output": "json_object_schema"}
    return OpenAICompatibleChat(**{**options, **overrides})


def test_round_trip_with_usage_and_schema(llama_server_url):
    chat = client(llama_server_url)
    request = ChatRequest(user_prompt("Is water wet? Answer yes or no."), max_tokens=20,
                          json_schema={"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}},
                                       "required": ["answer"]}, logprobs=True, top_logprobs=2)
    response = chat.chat(request)
    assert response.text.replace(" ", "") in ('{"answer":"yes"}', '{"answer":"no"}')
    assert response.prompt_tokens > 5 and response.completion_tokens > 0
    assert response.finish_reason == "stop"
    assert response.token_logprobs and all(t.logprob <= 0 for t in response.token_logprobs)


@pytest.fixture(scope="module")
def proxy(llama_server_url):
    with FaultProxy(llama_server_url, retry_after=0.6, hang_s=3.0) as running:
        yield running


def test_429_honours_retry_after_then_succeeds(proxy):
    proxy.queue("429")
    response = client(proxy.base_url).chat(SHORT)
    assert response.completion_tokens > 0
    (first, t0), (second, t1) = proxy.seen
    assert (first, second) == ("429", "pass")
    assert t1 - t0 >= 0.55  # waited for Retry-After: 0.6, not the 0.05 s backoff


def test_429_until_retries_run_out(proxy):
    proxy.queue("429", "429", "429")
    with pytest.raises(LLMRateLimitError) as caught:
        client(proxy.base_url, max_retries=2).chat(SHORT)
    assert caught.value.retry_after == pytest.approx(0.6)
    assert len(proxy.seen) == 3


def test_500_is_retried(proxy):
    proxy.queue("500")
    assert client(proxy.base_url).chat(SHORT).completion_tokens > 0
    assert [fault for fault, _ in proxy.seen] == ["500", "pass"]


def test_500_after_all_retries(proxy):
    proxy.queue("500", "500", "500")
    with pytest.raises(LLMServerError, match="HTTP 500"):
        client(proxy.base_url).chat(SHORT)


def test_hang_past_timeout(proxy):
    proxy.queue("hang", "hang")
    with pytest.raises(LLMTimeoutError, match="within 1 s"):
        client(proxy.base_url, timeout=1.0, max_retries=1).chat(SHORT)
    assert [fault for fault, _ in proxy.seen] == ["hang", "hang"]  # both attempts timed out


def test_dropped_connection_then_success(proxy):
    proxy.queue("drop")
    assert client(proxy.base_url).chat(SHORT).completion_tokens > 0


def test_dropped_connection_every_time(proxy):
    proxy.queue("drop", "drop", "drop")
    with pytest.raises(LLMConnectionError):
        client(proxy.base_url).chat(SHORT)


def test_non_json_body(proxy):
    proxy.queue("not_json")
    with pytest.raises(LLMMalformedResponseError, match="not JSON"):
        client(proxy.base_url).chat(SHORT)
    assert len(proxy.seen) == 1  # not retried: the server answered, just not with JSON


def test_body_cut_mid_transfer(proxy):
    proxy.queue("cut_body", "cut_body", "cut_body")
    with pytest.raises(LLMConnectionError):
        client(proxy.base_url).chat(SHORT)


def test_truncated_completion_keeps_partial_text(proxy):
    request = ChatRequest(user_prompt("Write a long story about a dragon."), max_tokens=5)
    with pytest.raises(TruncatedResponseError) as caught:
        client(proxy.base_url).chat(request)
    assert caught.value.response.completion_tokens == 5
    assert caught.value.response.text


def test_auth_error_is_not_retried():
    import http.server
    import threading

    calls = []

    class Refuse(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            calls.append(self.headers.get("Authorization"))
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = http.server.HTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(LLMAuthError, match="OPENAI_API_KEY"):
            client(f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="sk-wrong").chat(SHORT)
    finally:
        server.shutdown()
    assert calls == ["Bearer sk-wrong"]


def test_nothing_listening_is_a_connection_error():
    with pytest.raises(LLMConnectionError):
        client(f"http://127.0.0.1:{free_port()}/v1", max_retries=0).chat(SHORT)
