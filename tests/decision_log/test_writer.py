"""The decision log's writer: rows round-trip, ids stay unique, the log stays bounded, and a
disk that refuses writes drops and counts rows instead of raising (issue 32 item 2)."""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3

import pytest

from imad.decision_log import DecisionLog
from imad.decision_log.columns import LOG_COLUMNS, LogColumn
from imad.decision_log.labels import Label, set_label
from imad.decision_log.location import open_for_reading
from imad.decision_log.schema import SCHEMA_VERSION, error_kind
from imad.decision_log.writer import DROP_REASONS, LOG_EVENTS
from tests.decision_log.rows import decision_row


def written(path) -> list[dict]:
    store = open_for_reading(path)
    try:
        return list(store.rows())
    finally:
        store.close()


def test_rows_round_trip_with_text(tmp_path):
    rows = [decision_row(index, shadow=index % 2 == 0) for index in range(5)]
    with DecisionLog(tmp_path / "log.db", log_text=True) as log:
        assert all(log.record(row) for row in rows)
    back = written(tmp_path / "log.db")
    assert [row["response_id"] for row in back] == [row["response_id"] for row in rows]
    for original, stored in zip(rows, back, strict=True):
        for column in LOG_COLUMNS:
            expected = original.get(column.name)
            if column.name == "question_sha256":
                expected = hashlib.sha256(original["question"].encode()).hexdigest()
            assert stored[column.name] == expected, column.name
        assert stored["correct"] is None and stored["label_changes"] is None
    assert log.stats["written"] == 5 and log.stats.group("dropped") == {}


def test_without_log_text_the_question_is_a_hash_and_answers_hashes(tmp_path):
    row = decision_row(1)
    with DecisionLog(tmp_path / "log.db") as log:
        log.record(row)
    stored = written(tmp_path / "log.db")[0]
    assert stored["question"] is None
    assert stored["question_sha256"] == hashlib.sha256(b"question 1?").hexdigest()
    assert stored["single_answer"] == "sha256:" + hashlib.sha256(b"a").hexdigest()
    assert stored["debate_answer"] is None


def test_a_repeated_id_is_one_row(tmp_path):
    with DecisionLog(tmp_path / "log.db") as log:
        log.record(decision_row(3))
        log.flush()
        log.record({**decision_row(3), "p": 0.99})
    back = written(tmp_path / "log.db")
    assert len(back) == 1 and back[0]["p"] == decision_row(3)["p"]
    assert (log.stats["written"], log.stats["duplicates"]) == (1, 1)


def test_max_rows_prunes_the_oldest_and_their_labels(tmp_path):
    path = tmp_path / "log.db"
    with DecisionLog(path, max_rows=10, batch_size=4) as log:
        for index in range(4):
            log.record(decision_row(index))
        log.flush()
        store = open_for_reading(path, writable=True)
        set_label(store, Label("chatcmpl-000000", True))
        for index in range(4, 25):
            log.record(decision_row(index))
    back = written(path)
    assert [row["response_id"] for row in back] == [f"chatcmpl-{index:06d}" for index in range(15, 25)]
    assert log.stats["pruned"] == 15 and log.stats["written"] == 25
    assert store.connection.execute("SELECT count(*) FROM labels").fetchone()[0] == 0
    store.close()


def test_the_schema_is_versioned_and_a_new_column_is_added_on_open(tmp_path):
    path = tmp_path / "log.db"
    first = tuple(column for column in LOG_COLUMNS if column.name in ("response_id", "time", "p"))
    with DecisionLog(path, columns=first) as log:
        log.record({"response_id": "a", "time": 1.0, "p": 0.5})
    extended = (*first, LogColumn("note", "TEXT", "a column added later"))
    with DecisionLog(path, columns=extended) as log:
        log.record({"response_id": "b", "time": 2.0, "note": "hello"})
    connection = sqlite3.connect(path)
    meta = dict(connection.execute("SELECT key, value FROM meta"))
    assert meta["format"] == "imad-decision-log" and int(meta["schema_version"]) == SCHEMA_VERSION
    assert connection.execute("SELECT response_id, note FROM decisions ORDER BY seq").fetchall() == [
        ("a", None), ("b", "hello")]
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_record_after_close_is_a_counted_drop(tmp_path):
    log = DecisionLog(tmp_path / "log.db")
    log.close()
    assert log.record(decision_row(1)) is False
    assert log.stats.group("dropped") == {"closed": 1}
    log.close()


def test_a_bad_row_is_dropped_and_its_batch_neighbours_written(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, "imad.decision_log"), \
            DecisionLog(tmp_path / "log.db") as log:
        log.record({"response_id": "x", "not_a_column": 1})
        log.record({"response_id": "", "time": 1.0})
        log.record(decision_row(2))
    assert [row["response_id"] for row in written(tmp_path / "log.db")] == ["chatcmpl-000002"]
    assert log.stats.group("dropped") == {"bad_row": 2}
    assert len(caplog.records) == 1 and "not_a_column" in caplog.records[0].getMessage()


def test_a_missing_folder_never_raises_and_logs_one_line(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, "imad.decision_log"), \
            DecisionLog(tmp_path / "no" / "such" / "log.db") as log:
        assert all(log.record(decision_row(index)) for index in range(3))
        log.flush()
    assert log.stats.group("dropped") == {"unwritable": 3} and log.stats["written"] == 0
    assert len(caplog.records) == 1 and "unable to open" in caplog.records[0].getMessage()


def test_a_read_only_database_drops_and_counts(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, "imad.decision_log"), \
            DecisionLog(tmp_path / "log.db") as log:
        log.record(decision_row(0))
        log.flush()
        log._store.connection.execute("PRAGMA query_only = ON")  # SQLite's read-only error
        for index in range(1, 4):
            log.record(decision_row(index))
        log.flush()
    assert log.stats["written"] == 1 and log.stats.group("dropped") == {"unwritable": 3}
    assert len(caplog.records) == 1 and "readonly" in caplog.records[0].getMessage()
    assert len(written(tmp_path / "log.db")) == 1


def test_a_full_disk_drops_and_counts(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, "imad.decision_log"), \
            DecisionLog(tmp_path / "log.db", batch_size=1) as log:
        log.record(decision_row(0))
        log.flush()
        connection = log._store.connection
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute(f"PRAGMA max_page_count = {pages}")  # the file may not grow: "full"
        for index in range(1, 6):
            log.record({**decision_row(index), "features": {"x": "x" * 20_000}})
        log.flush()
    assert log.stats["dropped_unwritable"] >= 1
    assert log.stats["written"] + sum(log.stats.group("dropped").values()) == 6
    full = [record for record in caplog.records if "full" in record.getMessage()]
    assert len(caplog.records) == 1 and len(full) == 1


def test_a_locked_database_drops_the_batch_then_recovers(tmp_path, caplog):
    path = tmp_path / "log.db"
    with caplog.at_level(logging.WARNING, "imad.decision_log"), \
            DecisionLog(path, busy_timeout_s=0.05) as log:
        log.record(decision_row(0))
        log.flush()
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        log.record(decision_row(1))
        log.flush()
        holder.execute("ROLLBACK")
        holder.close()
        log.record(decision_row(2))
    assert log.stats.group("dropped") == {"busy": 1} and log.stats["written"] == 2
    assert "locked" in caplog.records[0].getMessage()


def test_a_full_queue_drops_and_counts(tmp_path):
    path = tmp_path / "log.db"
    DecisionLog(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # the writer thread waits on its first batch
    log = DecisionLog(path, queue_size=2, batch_size=1, busy_timeout_s=30.0)
    accepted = [log.record(decision_row(index)) for index in range(6)]
    assert accepted.count(False) >= 3  # at most one row in the writer, two in the queue
    assert log.stats["dropped_queue_full"] == accepted.count(False)
    holder.execute("ROLLBACK")
    holder.close()
    log.close()
    assert log.stats["written"] == accepted.count(True)
    assert len(written(path)) == accepted.count(True)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file modes (the query_only "
                    "test above gives SQLite the same read-only error)")
def test_a_read_only_file_and_folder_drop_and_count(tmp_path, caplog):
    path = tmp_path / "log.db"
    with DecisionLog(path) as log:
        log.record(decision_row(0))
    path.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        with caplog.at_level(logging.WARNING, "imad.decision_log"), DecisionLog(path) as log:
            assert log.record(decision_row(1)) is True
            log.flush()
    finally:
        tmp_path.chmod(0o755)
        path.chmod(0o644)
    assert log.stats.group("dropped") == {"unwritable": 1} and len(caplog.records) == 1
    assert len(written(path)) == 1


def test_a_label_runs_after_the_rows_queued_before_it(tmp_path):
    from imad.decision_log.labels import Label
    from imad.errors import UnknownDecisionError

    with DecisionLog(tmp_path / "log.db") as log:
        log.record(decision_row(7))  # still queued, most likely: the label must wait for it
        assert log.label(Label("chatcmpl-000007", False, "judge")) == 0
        assert log.label(Label("chatcmpl-000007", True, "gold")) == 1
        with pytest.raises(UnknownDecisionError, match="chatcmpl-404"):
            log.label(Label("chatcmpl-404", True))
    stored = written(tmp_path / "log.db")[0]
    assert (stored["correct"], stored["label_source"], stored["label_changes"]) == (True, "gold", 1)


def test_an_amendment_adds_the_shadow_debate_to_its_row(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, "imad.decision_log"), DecisionLog(tmp_path / "log.db") as log:
        log.record({**decision_row(4), "debate_answer": None, "shadow_debate": True})
        assert log.amend({"response_id": "chatcmpl-000004", "debate_answer": "C ",
                          "debate_prompt_tokens": 4200})
        assert log.amend({"response_id": "chatcmpl-000404", "debate_answer": "C"})
        assert log.amend({"response_id": "chatcmpl-000004", "nope": 1})
        assert log.amend(None) is False
    stored = written(tmp_path / "log.db")[0]
    assert stored["debate_answer"] == "sha256:" + hashlib.sha256(b"c").hexdigest()
    assert (stored["debate_prompt_tokens"], stored["critique_prompt_tokens"]) == (4200, 420)
    assert stored["single_answer"] == "sha256:" + hashlib.sha256(b"a").hexdigest()
    assert log.stats["amended"] == 1
    assert log.stats.group("dropped") == {"unknown_id": 1, "bad_row": 2}


def test_a_failing_listener_is_noted_once_and_the_rows_are_still_written(tmp_path, caplog):
    heard = []

    def broken(event: str, count: int) -> None:
        heard.append(event)
        raise RuntimeError("metrics are down")

    with caplog.at_level(logging.WARNING, "imad.decision_log"), \
            DecisionLog(tmp_path / "log.db", on_count=broken) as log:
        assert all(log.record(decision_row(index)) for index in range(3))
    assert (log.stats["recorded"], log.stats["written"], len(written(tmp_path / "log.db"))) == (3, 3, 3)
    assert heard.count("recorded") == 3 and "written" in heard
    (note,) = [record.getMessage() for record in caplog.records]
    assert "a counter failed" in note and "RuntimeError: metrics are down" in note


@pytest.mark.parametrize(("message", "kind"), [("database is locked", "busy"),
                                               ("attempt to write a readonly database", "unwritable"),
                                               ("file is not a database", "damaged"),
                                               ("no such table: decisions", "other")])
def test_every_kind_of_write_failure_has_a_declared_drop_count(message, kind):
    assert error_kind(sqlite3.OperationalError(message)) == kind
    assert kind in DROP_REASONS and f"dropped_{kind}" in LOG_EVENTS
