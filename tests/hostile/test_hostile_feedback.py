"""Hostile bodies of `POST /v1/imad/feedback` (issue 32 item 3), through the body parser and
the store the route calls (`imad.serve.routes.feedback`): 400 naming what is wrong, 404 for an id the
log does not hold or a server without a log, 503 when the log cannot be written; a label is
stored only from a good body. (413 for an oversized body is `read_body`'s, tested with the
other routes' limits.)"""

from __future__ import annotations

import pytest

from imad.decision_log import DecisionLog
from imad.decision_log.location import open_for_reading
from imad.errors import ServeError, UnknownDecisionError
from imad.serve.routes.feedback import FEEDBACK_MAX_BYTES, store_feedback
from tests.decision_log.rows import decision_row

ID = "chatcmpl-000000"

BAD_BODIES = [
    (b"", "not valid JSON", None),
    (b"{", "not valid JSON", None),
    (b"[1]", "must be a JSON object, got a JSON array", None),
    (b'"text"', "must be a JSON object, got a JSON string", None),
    (b"null", "must be a JSON object, got a JSON null", None),
    (b"[" * 5000, "not valid JSON", None),
    (b'{"id": "x", "correct": NaN}', "not valid JSON", None),
    (b'{"id": "\\ud800", "correct": true}', "not valid JSON", None),
    (b'{"correct": true}', "id must be a non-empty string", "id"),
    (b'{"id": "", "correct": true}', "id must be a non-empty string", "id"),
    (b'{"id": 12, "correct": true}', "not the number 12", "id"),
    (b'{"id": "' + b"x" * 300 + b'", "correct": true}', "over the limit of 256", "id"),
    (b'{"id": "x"}', "correct must be true or false, not missing", "correct"),
    (b'{"id": "x", "correct": 1}', "correct must be true or false, not the number 1", "correct"),
    (b'{"id": "x", "correct": "false"}', "not the string 'false'", "correct"),
    (b'{"id": "x", "correct": true, "source": "admin"}', "source must be one of user, judge, gold",
     "source"),
    (b'{"id": "x", "correct": true, "debate_correct": 0}', "debate_correct must be true, false",
     "debate_correct"),
    (b'{"id": "x", "correct": true, "extra": 1}', "unknown key(s) 'extra'", None),
    (b'\xff\xfe{}', "not valid JSON", None),
    # a key named twice: Python's json keeps the last, so this would label chatcmpl-000000
    (b'{"id": "chatcmpl-404", "id": "chatcmpl-000000", "correct": true}',
     "an object names the key 'id' twice", "id"),
    (b'{"id": "chatcmpl-000000", "correct": true, "correct": false}',
     "an object names the key 'correct' twice", "correct"),
]


@pytest.fixture
def log(tmp_path):
    with DecisionLog(tmp_path / "log.db") as writer:
        writer.record(decision_row(0))
        writer.flush()
        yield writer


def labels(log) -> list[tuple]:
    log.flush()
    store = open_for_reading(log.path)
    try:
        return store.connection.execute("SELECT id, correct, source, changes FROM labels").fetchall()
    finally:
        store.close()


@pytest.mark.parametrize(("body", "message", "param"), BAD_BODIES,
                         ids=[row[0][:40].decode("latin-1") for row in BAD_BODIES])
def test_a_bad_body_is_400_and_stores_nothing(body, message, param, log):
    with pytest.raises(ServeError) as caught:
        store_feedback(log, body)
    assert caught.value.status == 400 and message in caught.value.message
    assert caught.value.param == param
    assert labels(log) == []


def test_a_good_body_is_stored_and_a_repeat_counts_the_change(log):
    first = store_feedback(log, b'{"id": "%s", "correct": true}' % ID.encode())
    assert first == {"id": ID, "correct": True, "source": "user", "debate_correct": None, "changes": 0}
    again = store_feedback(log, b'{"id": "%s", "correct": false, "source": "judge"}' % ID.encode())
    assert again["changes"] == 1
    assert labels(log) == [(ID, 0, "judge", 1)]


def test_an_unknown_id_is_404(log):
    with pytest.raises(ServeError) as caught:
        store_feedback(log, b'{"id": "chatcmpl-404", "correct": true}')
    assert caught.value.status == 404 and caught.value.param == "id"
    assert "no decision with id 'chatcmpl-404'" in caught.value.message


class SiblingRecordsLate:
    """Worker B's decision log, on the file worker A also writes: A's writer records the row only
    after B's first try at the label (a label that overtook its row under --workers)."""

    def __init__(self, mine: DecisionLog, sibling: DecisionLog, row: dict, *, late: bool = True) -> None:
        self.mine, self.sibling, self.row, self.late = mine, sibling, row, late
        self.tries = 0

    def label(self, label) -> int:
        self.tries += 1
        try:
            return self.mine.label(label)
        except UnknownDecisionError:
            if self.late and self.tries == 1:
                self.sibling.record(self.row)
                self.sibling.flush()
            raise


@pytest.fixture
def two_workers(tmp_path):
    with DecisionLog(tmp_path / "shared.db") as worker_a, DecisionLog(tmp_path / "shared.db") as worker_b:
        yield worker_a, worker_b


def test_under_workers_a_label_that_overtook_its_row_waits_for_it(two_workers):
    worker_a, worker_b = two_workers
    log_b = SiblingRecordsLate(worker_b, worker_a, decision_row(1))
    answer = store_feedback(log_b, b'{"id": "chatcmpl-000001", "correct": true}', sibling_grace_s=5.0)
    assert answer["changes"] == 0 and log_b.tries == 2
    assert labels(worker_b) == [("chatcmpl-000001", 1, "user", 0)]


def test_under_workers_an_id_no_worker_records_is_404_after_the_grace(two_workers):
    worker_a, worker_b = two_workers
    log_b = SiblingRecordsLate(worker_b, worker_a, decision_row(1), late=False)
    with pytest.raises(ServeError) as caught:
        store_feedback(log_b, b'{"id": "chatcmpl-000001", "correct": true}', sibling_grace_s=0.2)
    assert caught.value.status == 404 and log_b.tries >= 2
    assert labels(worker_b) == []


def test_one_process_refuses_an_unknown_id_at_once(two_workers):
    worker_a, worker_b = two_workers
    log_b = SiblingRecordsLate(worker_b, worker_a, decision_row(1))
    with pytest.raises(ServeError) as caught:
        store_feedback(log_b, b'{"id": "chatcmpl-000001", "correct": true}')
    assert caught.value.status == 404 and log_b.tries == 1


def test_no_decision_log_is_404_naming_the_flag():
    with pytest.raises(ServeError) as caught:
        store_feedback(None, b'{"id": "x", "correct": true}')
    assert caught.value.status == 404 and "--decision-log PATH" in caught.value.message


def test_an_unwritable_log_is_503(log):
    log.flush()
    log._store.connection.execute("PRAGMA query_only = ON")
    with pytest.raises(ServeError) as caught:
        store_feedback(log, b'{"id": "%s", "correct": true}' % ID.encode())
    assert caught.value.status == 503 and "the label was not stored" in caught.value.message


def test_the_body_limit_holds_the_longest_label():
    longest = b'{"id": "%s", "correct": false, "source": "judge", "debate_correct": false}' % (
        b"x" * 256)
    assert len(longest) * 10 < FEEDBACK_MAX_BYTES
