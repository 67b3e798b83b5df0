"""`POST /v1/imad/feedback` on a real loopback server (issue 32 item 3): a label is stored against
its logged decision, a repeat counts the change, and every refusal has its status: 400 bad body,
401 no key, 404 unknown id or no log, 413 oversized body. `/v1/imad/stats` shows the log's
counters."""

from __future__ import annotations

import httpx
import pytest

from imad.decision_log import DecisionLog
from imad.decision_log.location import open_for_reading
from imad.serve import ServeSettings
from imad.serve.routes.feedback import FEEDBACK_MAX_BYTES
from tests.decision_log.rows import decision_row
from tests.serve.conftest import API_KEY

HEADERS = {"Authorization": f"Bearer {API_KEY}"}


def root_of(server) -> str:
    return server.base_url.removesuffix("/v1")


@pytest.fixture
def logged(start_server, tmp_path):
    """A server with a decision log that already holds two decisions (written by another
    process's writer, as a second worker would)."""
    path = tmp_path / "decisions.db"
    with DecisionLog(path) as other_worker:
        other_worker.record(decision_row(0))
        other_worker.record(decision_row(1))
    server = start_server(ServeSettings(api_key=API_KEY, decision_log=str(path)))
    return server, path


def post(server, body, headers=HEADERS) -> httpx.Response:
    content = body if isinstance(body, bytes) else None
    return httpx.post(root_of(server) + "/v1/imad/feedback", headers=headers, timeout=60,
                      content=content, json=None if content is not None else body)


def test_feedback_is_stored_and_a_repeat_counts_the_change(logged):
    server, path = logged
    first = post(server, {"id": "chatcmpl-000000", "correct": True})
    assert first.status_code == 200
    assert first.json() == {"id": "chatcmpl-000000", "correct": True, "source": "user",
                            "debate_correct": None, "changes": 0}
    again = post(server, {"id": "chatcmpl-000000", "correct": False, "source": "judge"})
    assert again.status_code == 200 and again.json()["changes"] == 1
    store = open_for_reading(path)
    labels = {row["response_id"]: (row["correct"], row["label_source"], row["label_changes"])
              for row in store.rows()}
    store.close()
    assert labels == {"chatcmpl-000000": (False, "judge", 1), "chatcmpl-000001": (None, None, None)}
    stats = httpx.get(root_of(server) + "/v1/imad/stats", headers=HEADERS, timeout=60).json()
    assert stats["decision_log"]["path"] == str(path) and stats["decision_log"]["dropped"] == {}


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"id": "chatcmpl-404", "correct": True}, 404, "unknown_id"),
    ({"id": "chatcmpl-000000", "correct": "yes"}, 400, "invalid_feedback"),
    ({"id": "chatcmpl-000000"}, 400, "invalid_feedback"),
    (b"{not json", 400, "invalid_json"),
    (b"[]", 400, "invalid_json"),
    (b'{"id": "' + b"x" * FEEDBACK_MAX_BYTES + b'", "correct": true}', 413, "request_too_large"),
])
def test_refusals_have_their_status(logged, body, status, code):
    server, _ = logged
    response = post(server, body)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code


def test_feedback_needs_the_key(logged):
    server, _ = logged
    response = post(server, {"id": "chatcmpl-000000", "correct": True}, headers={})
    assert response.status_code == 401


def test_a_server_without_a_log_says_so(start_server):
    server = start_server(ServeSettings(api_key=API_KEY))
    response = post(server, {"id": "chatcmpl-000000", "correct": True})
    assert response.status_code == 404 and "--decision-log PATH" in response.json()["error"]["message"]
    stats = httpx.get(root_of(server) + "/v1/imad/stats", headers=HEADERS, timeout=60).json()
    assert stats["decision_log"] is None
