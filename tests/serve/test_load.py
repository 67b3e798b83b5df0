"""Load on loopback: 200 requests at concurrency 16, no errors, no lost or crossed answers."""

from __future__ import annotations

import time

import pytest

from imad.llm.scripted import ScriptedChat
from imad.serve import ServeSettings
from tests.support.serving import echo_factory, echo_respond, run_load


@pytest.mark.slow
def test_200_requests_at_concurrency_16(start_server):
    server = start_server(ServeSettings(max_concurrency=16, api_key="k"))
    report = run_load(server.base_url, n=200, concurrency=16, api_key="k")
    print(report.summary())
    assert dict(report.statuses) == {200: 200} and report.retries_429 == 0
    assert report.wrong_answers == [] and report.duplicated_ids == 0 and len(report.ids) == 200


@pytest.mark.slow
def test_overload_gets_only_documented_429s_and_every_request_is_answered_once(start_server):
    def slow_echo(request):
        time.sleep(0.05)  # holds its slot long enough for the burst to find the server full
        return echo_respond(request)

    server = start_server(ServeSettings(max_concurrency=4, retry_after_s=1),
                          echo_factory(ScriptedChat(slow_echo)))
    report = run_load(server.base_url, n=40, concurrency=16, models=("imad-svrmad-0",))
    print(report.summary())
    assert dict(report.statuses) == {200: 40} and report.retries_429 > 0
    assert report.wrong_answers == [] and report.duplicated_ids == 0
