"""Load on loopback: 200 requests at concurrency 16, no errors, no lost or crossed answers."""

from __future__ import annotations

import threading

import pytest

from imad.errors import ServeError
from imad.llm.scripted import ScriptedChat
from imad.serve import ServeSettings
from imad.serve.limits import ConcurrencyLimiter
from tests.support.serving import echo_factory, echo_respond, run_load


@pytest.mark.slow
def test_200_requests_at_concurrency_16(start_server):
    server = start_server(ServeSettings(max_concurrency=16, api_key="k"))
    report = run_load(server.base_url, n=200, concurrency=16, api_key="k")
    print(report.summary())
    assert dict(report.statuses) == {200: 200} and report.retries_429 == 0
    assert report.wrong_answers == [] and report.duplicated_ids == 0 and len(report.ids) == 200


@pytest.mark.slow
def test_overload_gets_only_documented_429s_and_every_request_is_answered_once(start_server,
                                                                                monkeypatch):
    refused = threading.Event()
    acquire = ConcurrencyLimiter.acquire

    def acquire_noting_refusals(limiter):
        try:
            acquire(limiter)
        except ServeError:
            refused.set()
            raise

    def held_echo(request):
        refused.wait(60)  # every slot stays taken until the server has turned a request away
        return echo_respond(request)

    monkeypatch.setattr(ConcurrencyLimiter, "acquire", acquire_noting_refusals)
    server = start_server(ServeSettings(max_concurrency=4, retry_after_s=1),
                          echo_factory(ScriptedChat(held_echo)))
    report = run_load(server.base_url, n=40, concurrency=16, models=("imad-svrmad-0",))
    print(report.summary())
    assert dict(report.statuses) == {200: 40} and report.retries_429 > 0
    assert report.wrong_answers == [] and report.duplicated_ids == 0
