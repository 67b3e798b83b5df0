"""Concurrency limit, bounded queue (429 + Retry-After), per-request timeout (504), slot bookkeeping."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import openai
import pytest

from imad.errors import ServeError
from imad.serve import ServeSettings
from imad.serve.limits import AdmissionQueue
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


def test_queue_refuses_when_full_and_counts_slots():
    async def scenario() -> tuple:
        admission = AdmissionQueue(2, max_queue=1, queue_timeout_s=60, retry_after_s=7)
        await admission.acquire()
        await admission.acquire()
        waiter = asyncio.ensure_future(admission.acquire())
        await asyncio.sleep(0)  # the waiter takes its place in the queue
        with pytest.raises(ServeError) as full:
            await admission.acquire()
        state = (admission.in_use, admission.waiting)
        admission.release()  # the slot goes to the waiter, not back to the pool
        await waiter
        return full.value, state, (admission.in_use, admission.waiting)

    full, before, after = asyncio.run(scenario())
    assert (full.status, full.code, full.headers["Retry-After"]) == (429, "server_busy", "7")
    assert before == (2, 1) and after == (2, 0)


def test_a_wait_past_the_queue_timeout_is_a_429_and_leaves_no_waiter():
    async def scenario() -> tuple:
        admission = AdmissionQueue(1, max_queue=4, queue_timeout_s=0.01, retry_after_s=3)
        await admission.acquire()
        with pytest.raises(ServeError) as late:
            await admission.acquire()
        waiting = admission.waiting
        admission.release()
        await admission.acquire()  # the slot is free again: no waiter kept it
        return late.value, waiting, admission.in_use

    late, waiting, in_use = asyncio.run(scenario())
    assert (late.status, late.code, waiting, in_use) == (429, "queue_timeout", 0, 1)


def test_a_release_from_another_thread_hands_the_slot_to_the_waiter():
    async def scenario() -> int:
        admission = AdmissionQueue(1, max_queue=1, queue_timeout_s=60, retry_after_s=1)
        await admission.acquire()
        waiter = asyncio.ensure_future(admission.acquire())
        await asyncio.sleep(0)
        releaser = threading.Thread(target=admission.release)
        releaser.start()
        await waiter
        releaser.join()
        return admission.in_use

    assert asyncio.run(scenario()) == 1


def test_429_with_retry_after_when_every_slot_is_busy(start_server, client_for):
    chat = BlockingChat()
    server = start_server(ServeSettings(max_concurrency=1, max_queue=0, retry_after_s=3),
                          echo_factory(chat))
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
    server = start_server(ServeSettings(max_concurrency=1, max_queue=0, request_timeout_s=0.5),
                          echo_factory(chat))
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


def test_a_queued_request_waits_for_the_slot_and_is_answered(start_server, client_for):
    chat = BlockingChat()
    server = start_server(ServeSettings(max_concurrency=1, max_queue=1), echo_factory(chat))
    client = client_for(server)
    answers: dict = {}
    first = threading.Thread(target=lambda: answers.setdefault(
        1, client.chat.completions.create(model="imad-svrmad-0", messages=ask(1))))
    first.start()
    assert chat.started.wait(10)
    second = threading.Thread(target=lambda: answers.setdefault(
        2, client.chat.completions.create(model="imad-svrmad-0", messages=ask(2))))
    second.start()
    wait_until(lambda: health(server)["waiting"] == 1)
    with pytest.raises(openai.RateLimitError) as caught:  # one slot busy, the queue of one full
        client.chat.completions.create(model="imad-svrmad-0", messages=ask(3))
    assert caught.value.code == "server_busy"
    chat.release.set()
    first.join(30)
    second.join(30)
    assert [answers[i].choices[0].message.content for i in (1, 2)] == ["1", "2"]


def health(server) -> dict:
    return httpx.get(server.base_url.removesuffix("/v1") + "/health").json()
