"""Concurrency limit (429 + Retry-After), per-request timeout (504) and the slot bookkeeping."""

from __future__ import annotations

import threading
import time

import httpx
import openai
import pytest

from imad.errors import ServeError
from imad.serve import ServeSettings
from imad.serve.limits import ConcurrencyLimiter
from tests.support.serving import BlockingChat, echo_factory, tagged_question


def ask(index: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": tagged_question(index)}]


def in_flight(server) -> int:
    return httpx.get(server.base_url.removesuffix("/v1") + "/health").json()["in_flight"]


def wait_until(condition, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_limiter_refuses_when_full_and_counts_slots():
    limiter = ConcurrencyLimiter(2, retry_after_s=7)
    limiter.acquire()
    limiter.acquire()
    with pytest.raises(ServeError) as caught:
        limiter.acquire()
    assert (caught.value.status, caught.value.headers["Retry-After"], limiter.in_use) == (429, "7", 2)
    limiter.release()
    limiter.acquire()
    assert limiter.in_use == 2


def test_429_with_retry_after_when_every_slot_is_busy(start_server, client_for):
    chat = BlockingChat()
    server = start_server(ServeSettings(max_concurrency=1, retry_after_s=3), echo_factory(chat))
    client = client_for(server)
    first: dict = {}
    worker = threading.Thread(target=lambda: first.setdefault(
        "answer", client.chat.completions.create(model="imad-svrmad-0", messages=ask(1))))
    worker.start()
    assert chat.started.wait(10)
    assert in_flight(server) == 1
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="imad-svrmad-0", messages=ask(2))
    assert caught.value.code == "server_busy" and caught.value.response.headers["retry-after"] == "3"
    chat.release.set()
    worker.join(30)
    assert first["answer"].choices[0].message.content == "1"
    wait_until(lambda: in_flight(server) == 0)
    again = client.chat.completions.create(model="imad-svrmad-0", messages=ask(3))
    assert again.choices[0].message.content == "3"


def test_timeout_is_a_504_and_the_slot_is_held_until_the_work_ends(start_server, client_for):
    chat = BlockingChat()
    server = start_server(ServeSettings(max_concurrency=1, request_timeout_s=0.5), echo_factory(chat))
    client = client_for(server)
    with pytest.raises(openai.APIStatusError) as caught:  # the model blocks until released
        client.chat.completions.create(model="imad-svrmad-0", messages=ask(1))
    assert caught.value.status_code == 504 and caught.value.code == "request_timeout"
    assert "0.5 s" in caught.value.message
    assert in_flight(server) == 1  # the abandoned pipeline still runs: it keeps its slot
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="imad-svrmad-0", messages=ask(2))
    chat.release.set()
    wait_until(lambda: in_flight(server) == 0)
    again = client.chat.completions.create(model="imad-svrmad-0", messages=ask(3))
    assert again.choices[0].message.content == "3"
