"""`imad serve --decision-log` on a real loopback server (issue 32 item 2): one row per answered
request, named by its completion id and equal to what the response said; feedback labels them
and the report card counts them; a log the disk refuses never fails a request."""

from __future__ import annotations

import hashlib

import httpx

from imad.decision_log.location import open_for_reading
from imad.errors import LLMConnectionError
from imad.llm.scripted import ScriptedChat
from imad.llm.types import ChatRequest, ChatResponse
from imad.report import report_card
from imad.serve import ServeSettings
from imad.serve.metrics import sample_values
from tests.serve.conftest import API_KEY
from tests.support.serving import echo_factory, echo_respond, tagged_question

HEADERS = {"Authorization": f"Bearer {API_KEY}"}
MODELS = ("imad-svrmad-0", "imad-svrmad-1")  # τ 0 keeps every answer, τ 1 escalates every one


def root_of(server) -> str:
    return server.base_url.removesuffix("/v1")


def ask(server, index: int, model: str, stream: bool = False) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": tagged_question(index)}],
            "stream": stream}
    return httpx.post(server.base_url + "/chat/completions", json=body, headers=HEADERS, timeout=120)


def rows_of(path) -> list[dict]:
    store = open_for_reading(path)
    try:
        return list(store.rows())
    finally:
        store.close()


def test_every_answer_is_one_row_equal_to_its_response(start_server, tmp_path):
    path = tmp_path / "decisions.db"
    server = start_server(ServeSettings(api_key=API_KEY, decision_log=str(path), log_text=True))
    responses = {}
    for index in range(6):
        model = MODELS[index % 2]
        response = ask(server, index, model, stream=index == 5)
        assert response.status_code == 200
        responses[response.headers["x-request-id"]] = (index, model, response)
    server.stop(timeout_s=15)  # shutting down flushes the writer
    rows = rows_of(path)
    assert sorted(row["response_id"] for row in rows) == sorted(responses)
    for row in rows:
        index, model, response = responses[row["response_id"]]
        assert (row["served_model"], row["question"]) == (model, tagged_question(index))
        assert row["escalated"] is (model == "imad-svrmad-1") and row["would_escalate"] is None
        assert row["served"] == ("debate" if row["escalated"] else "single_agent")
        assert (row["backend"], row["policy_rule"]) == ("svrmad", "fixed")
        assert row["single_answer"] == str(index)
        assert row["router_hash"] and len(row["router_hash"]) == 64
        assert row["question_sha256"] == hashlib.sha256(tagged_question(index).encode()).hexdigest()
        if index != 5:  # the streamed one carries its decision in the header only
            info = response.json()["imad"]
            assert (row["p"], row["tau"], row["tau_source"]) == (info["p"], info["tau"], info["tau_source"])
        assert row["critique_prompt_tokens"] > 0 and 0.0 <= row["raw"] <= 1.0
        assert (row["debate_prompt_tokens"] > 0) is row["escalated"]


def test_feedback_then_the_report_card(start_server, tmp_path):
    path = tmp_path / "decisions.db"
    server = start_server(ServeSettings(api_key=API_KEY, decision_log=str(path)))
    ids = [ask(server, index, "imad-svrmad-0").headers["x-request-id"] for index in range(8)]
    for index, completion_id in enumerate(ids[:5]):
        response = httpx.post(root_of(server) + "/v1/imad/feedback", headers=HEADERS, timeout=60,
                              json={"id": completion_id, "correct": index % 2 == 0})
        assert response.status_code == 200
    server.stop(timeout_s=15)
    card = report_card(path)
    assert (card["rows"], card["labelled"], card["auroc"]) == (8, 5, None)
    assert "too few labels" in card["auroc_note"]


def test_an_unwritable_log_never_fails_a_request(start_server, tmp_path, caplog):
    path = tmp_path / "missing" / "decisions.db"
    server = start_server(ServeSettings(api_key=API_KEY, decision_log=str(path)))
    statuses = [ask(server, index, "imad-svrmad-0").status_code for index in range(3)]
    stats = httpx.get(root_of(server) + "/v1/imad/stats", headers=HEADERS, timeout=60).json()
    assert statuses == [200, 200, 200]
    log = server.server.config.app.state.server.decision_log
    log.flush()
    assert log.stats.group("dropped") == {"unwritable": 3} and stats["decision_log"]["written"] == 0
    text = httpx.get(root_of(server) + "/metrics", headers=HEADERS, timeout=60).text
    samples = sample_values(text, "imad_decision_log_rows_total")
    counted = {labels["event"]: value for labels, value in samples}
    assert counted == {"recorded": 3.0, "dropped_unwritable": 3.0}
    assert len([r for r in caplog.records if "decision log" in r.getMessage()]) == 1


class DownChat(ScriptedChat):
    """The echo model, whose every call fails once `down` is set (its server went away)."""

    down = False

    def chat(self, request: ChatRequest) -> ChatResponse:
        if self.down:
            raise LLMConnectionError("the model server went away")
        return super().chat(request)


def test_a_failed_request_is_a_row_that_served_nothing_and_the_report_leaves_it_out(start_server,
                                                                                     tmp_path):
    """/metrics counts every request that reached the pipeline; so does the log: an upstream
    failure (502) is a row whose `served` is none, with the upstream's error, and the report
    card's numbers leave it out (`unanswered`)."""
    path = tmp_path / "decisions.db"
    chat = DownChat(echo_respond)
    server = start_server(ServeSettings(api_key=API_KEY, decision_log=str(path)), echo_factory(chat))
    statuses = {ask(server, index, "imad-svrmad-0").status_code for index in range(3)}
    chat.down = True
    failed = [ask(server, index, "imad-svrmad-0") for index in range(3, 5)]
    text = httpx.get(root_of(server) + "/metrics", headers=HEADERS, timeout=60).text
    server.stop(timeout_s=15)
    assert statuses == {200} and [response.status_code for response in failed] == [502, 502]
    decisions = sum(value for _, value in sample_values(text, "imad_decisions_total"))
    rows = {row["response_id"]: row for row in rows_of(path)}
    assert len(rows) == decisions == 5
    for response in failed:
        row = rows[response.headers["x-request-id"]]
        assert row["served"] == "none" and "LLMConnectionError" in row["error"]
        assert row["question"] is None and row["served_model"] == "imad-svrmad-0"
    card = report_card(path)
    assert (card["rows"], card["unanswered"], card["volume"]["rows"]) == (3, 2, 3)
