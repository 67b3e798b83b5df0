"""Bounded load on loopback (issue 20, item 7): a few hundred requests, no timing assertions.

No 5xx, no lost or crossed answers, every request counted in the metrics (request counter =
requests sent, decision outcomes = requests admitted), a full queue refuses with 429, and a
graceful shutdown lets the request in flight finish.
"""

from __future__ import annotations

import logging
import threading

import httpx
import pytest

from imad.errors import ServeError
from imad.llm.scripted import ScriptedChat
from imad.serve import ServeSettings
from imad.serve.limits import AdmissionQueue
from imad.serve.metrics import sample_values
from tests.support.serving import BlockingChat, echo_factory, echo_respond, run_load, tagged_question


def scrape(server, api_key: str) -> str:
    response = httpx.get(server.base_url.removesuffix("/v1") + "/metrics",
                         headers={"Authorization": f"Bearer {api_key}"})
    assert response.status_code == 200
    return response.text


def total(text: str, name: str, **labels: str) -> float:
    return sum(value for found, value in sample_values(text, name)
               if all(found.get(key) == wanted for key, wanted in labels.items()))


@pytest.mark.slow
def test_300_requests_at_concurrency_16_are_all_answered_and_counted(start_server):
    server = start_server(ServeSettings(max_concurrency=8, api_key="k"), scoring_processes=2)
    report = run_load(server.base_url, n=300, concurrency=16, api_key="k")
    print(report.summary())
    assert not report.timeouts, f"no response within 60 s to {report.timeouts}; threads then:\n" \
                                f"{report.stacks_at_first_timeout}"
    sent = report.n + report.retries_429
    assert not [status for status in report.statuses if status >= 500]
    assert report.answered == 300 and report.wrong_answers == [] and report.duplicated_ids == 0
    text = scrape(server, "k")
    assert total(text, "imad_requests_total") == sent
    assert total(text, "imad_requests_total", code="200") == 300
    assert total(text, "imad_decisions_total") == 300  # every admitted request, one outcome each
    kept = total(text, "imad_decisions_total", model="imad-svrmad-0", outcome="kept")
    escalated = total(text, "imad_decisions_total", model="imad-svrmad-1", outcome="escalated_below_tau")
    assert (kept, escalated) == (150, 150)
    assert total(text, "imad_router_score_count") == 300
    assert total(text, "imad_in_flight") == 0 and total(text, "imad_queue_depth") == 0


@pytest.mark.slow
def test_a_full_queue_refuses_with_429_and_every_request_is_answered_once(start_server, monkeypatch):
    refused = threading.Event()
    acquire = AdmissionQueue.acquire

    async def acquire_noting_refusals(admission):
        try:
            await acquire(admission)
        except ServeError:
            refused.set()
            raise

    def held_echo(request):
        refused.wait(60)  # every slot and queue place stays taken until one request is turned away
        return echo_respond(request)

    monkeypatch.setattr(AdmissionQueue, "acquire", acquire_noting_refusals)
    server = start_server(ServeSettings(max_concurrency=4, max_queue=4, retry_after_s=1, api_key="k"),
                          echo_factory(ScriptedChat(held_echo)))
    report = run_load(server.base_url, n=40, concurrency=16, models=("imad-svrmad-0",), api_key="k")
    print(report.summary())
    assert not report.timeouts, report.stacks_at_first_timeout
    assert dict(report.statuses) == {200: 40} and report.retries_429 > 0
    assert report.wrong_answers == [] and report.duplicated_ids == 0
    text = scrape(server, "k")
    assert total(text, "imad_requests_total", code="429") == report.retries_429
    assert total(text, "imad_decisions_total") == 40


class _ShutdownSeen(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "Shutting down":
            self.seen.set()


def test_graceful_shutdown_lets_the_request_in_flight_finish(start_server):
    chat = BlockingChat()
    server = start_server(ServeSettings(max_concurrency=2), echo_factory(chat))
    answer: dict = {}
    body = {"model": "imad-svrmad-0", "messages": [{"role": "user", "content": tagged_question(7)}]}
    request = threading.Thread(target=lambda: answer.setdefault(
        "response", httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=60)))
    request.start()
    assert chat.started.wait(10)
    watcher = _ShutdownSeen()
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(watcher)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        stopper = threading.Thread(target=server.stop, kwargs={"timeout_s": 60})
        stopper.start()
        assert watcher.seen.wait(30)  # uvicorn stopped accepting: the request is still running
        chat.release.set()
        request.join(60)
        stopper.join(60)
    finally:
        logger.removeHandler(watcher)
        logger.setLevel(level)
    response = answer["response"]
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "7"
    assert not stopper.is_alive()
