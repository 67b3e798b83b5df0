"""The decision log in a real PostgreSQL server: the same rows as SQLite, shared by processes, an
outage waited out, every row written or counted (`written + dropped = recorded`)."""

from __future__ import annotations

import logging
import threading

import pytest

from imad.decision_log import DecisionLog
from imad.decision_log.columns import LOG_COLUMNS
from imad.decision_log.fleet import fleet_counts
from imad.decision_log.labels import Label, set_label
from imad.decision_log.location import open_for_reading
from imad.decision_log.postgres import open_database
from imad.decision_log.url import parse_location
from imad.errors import UnknownDecisionError
from tests.decision_log.rows import decision_row


def _all_rows(log: str) -> list[dict]:
    store = open_for_reading(log)
    try:
        return list(store.rows())
    finally:
        store.close()


def _accounted(log: DecisionLog) -> int:
    return log.stats["written"] + log.stats["duplicates"] + sum(log.stats.group("dropped").values())


def test_rows_read_back_as_sqlite_reads_them(postgres_url, tmp_path):
    rows = [decision_row(index) for index in range(40)]
    rows[3]["question"] = "it's a 'quoted'; DROP TABLE decisions; -- \\ % ? $1 question"
    for target in (postgres_url, str(tmp_path / "log.db")):
        with DecisionLog(target, log_text=True, batch_size=7) as log:
            for row in rows:
                log.record(row)
            log.record(rows[0])  # the same id again: a duplicate, not a second row
            log.flush()
            assert (log.stats["written"], log.stats["duplicates"]) == (40, 1)
            assert log.label(Label(rows[3]["response_id"], True, "judge")) == 0
            assert log.label(Label(rows[3]["response_id"], False, "user", True)) == 1
    from_postgres, from_sqlite = _all_rows(postgres_url), _all_rows(str(tmp_path / "log.db"))
    assert len(from_postgres) == 40
    assert [{k: v for k, v in row.items() if k != "label_time"} for row in from_postgres] == \
        [{k: v for k, v in row.items() if k != "label_time"} for row in from_sqlite]
    assert from_postgres[3]["question"] == rows[3]["question"]
    assert (from_postgres[3]["correct"], from_postgres[3]["debate_correct"],
            from_postgres[3]["label_changes"]) == (False, True, 1)


def test_a_label_at_one_process_finds_the_row_another_wrote(postgres_url):
    with DecisionLog(postgres_url) as writer, DecisionLog(postgres_url) as other:
        writer.record(decision_row(1))
        writer.flush()
        assert other.label(Label("chatcmpl-000001", True)) == 0
        with pytest.raises(UnknownDecisionError):
            other.label(Label("chatcmpl-999999", True))


def test_replicas_starting_at_once_create_the_tables_once(postgres_url):
    opened, failures = [], []

    def start() -> None:
        try:
            opened.append(DecisionLog(postgres_url))
        except Exception as error:  # pragma: no cover - the assertion shows it
            failures.append(error)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for log in opened:
        log.close()
    assert failures == [] and len(opened) == 6


def test_a_column_the_schema_gains_is_added_on_open(postgres_url):
    fewer = tuple(column for column in LOG_COLUMNS if column.name not in ("host", "process"))
    location = parse_location(postgres_url)
    open_database(location, fewer, create=True).close()
    store = open_database(location, LOG_COLUMNS, create=True)
    try:
        assert {"host", "process"} <= {column.name for column in store.readable}
    finally:
        store.close()


def test_a_row_postgresql_cannot_hold_is_dropped_alone_and_counted(postgres_url):
    with DecisionLog(postgres_url, log_text=True) as log:
        bad = decision_row(2)
        bad["question"] = "a NUL \x00 inside"
        for row in (decision_row(1), bad, decision_row(3)):
            log.record(row)
        log.flush()
        assert log.stats["written"] == 2 and log.stats["dropped_bad_row"] == 1
    assert [row["response_id"] for row in _all_rows(postgres_url)] == \
        ["chatcmpl-000001", "chatcmpl-000003"]


def test_pruning_keeps_the_newest_rows_and_drops_their_labels(postgres_url):
    with DecisionLog(postgres_url, max_rows=5) as log:
        log.record(decision_row(0))
        log.flush()
        log.label(Label("chatcmpl-000000", True))
        for index in range(1, 9):
            log.record(decision_row(index))
        log.flush()
        assert log.stats["pruned"] == 4
    rows = _all_rows(postgres_url)
    assert [row["response_id"] for row in rows] == [f"chatcmpl-{i:06d}" for i in range(4, 9)]
    store = open_for_reading(postgres_url, writable=True)
    try:
        assert store.connection.execute("SELECT count(*) FROM labels").fetchone()[0] == 0
        with pytest.raises(UnknownDecisionError):
            set_label(store, Label("chatcmpl-000000", True))
    finally:
        store.close()


@pytest.mark.slow
def test_an_outage_is_waited_out_and_every_row_is_written(postgres_server, caplog):
    url = postgres_server.url(postgres_server.fresh_database())
    caplog.set_level(logging.WARNING, logger="imad.decision_log")
    log = DecisionLog(url, batch_size=16)
    try:
        for index in range(20):
            log.record(decision_row(index))
        log.flush()
        postgres_server.stop()
        try:
            for index in range(20, 220):  # answered while the database is down: none may fail
                assert log.record(decision_row(index)) is True
        finally:
            postgres_server.start()
        log.flush()
        assert log.stats["written"] == 220 and log.stats.group("dropped") == {}
    finally:
        log.close()
    assert len(_all_rows(url)) == 220
    waits = [r.getMessage() for r in caplog.records if "rows wait in the queue" in r.getMessage()]
    assert len(waits) == 1 and "p%40ss" not in waits[0] and "p@ss" not in waits[0]
    assert any("answers again" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.name.startswith("psycopg")]  # no line per attempt


@pytest.mark.slow
def test_past_the_queue_bound_rows_are_dropped_and_counted(postgres_server):
    url = postgres_server.url(postgres_server.fresh_database())
    log = DecisionLog(url, queue_size=50, batch_size=10)
    postgres_server.stop()
    try:
        for index in range(300):
            log.record(decision_row(index))
    finally:
        postgres_server.start()
    log.flush()
    log.close()
    dropped = log.stats.group("dropped")
    assert set(dropped) == {"queue_full"} and dropped["queue_full"] > 0
    assert log.stats["written"] + dropped["queue_full"] == log.stats["recorded"] + dropped[
        "queue_full"] == 300
    assert len(_all_rows(url)) == log.stats["written"]


@pytest.mark.slow
def test_closing_while_the_database_is_down_counts_the_rows_it_could_not_write(postgres_server):
    url = postgres_server.url(postgres_server.fresh_database())
    log = DecisionLog(url, batch_size=10)
    postgres_server.stop()
    try:
        for index in range(30):
            log.record(decision_row(index))
        log.close()
    finally:
        postgres_server.start()
    assert log.stats["written"] == 0 and log.stats.group("dropped") == {"unreachable": 30}
    assert _accounted(log) == 30


def test_the_stats_count_every_replicas_rows(postgres_url, tmp_path):
    with DecisionLog(postgres_url) as one, DecisionLog(postgres_url) as two:
        one.record({**decision_row(1), "host": "web-1", "process": 1})
        two.record({**decision_row(2), "host": "web-2", "process": 2})
        two.record({**decision_row(3), "host": "web-2", "process": 2})
        one.flush()
        two.flush()
        one.label(Label("chatcmpl-000003", True))
        assert fleet_counts(one) == {"rows": 3, "labelled": 1, "replicas": 2}
    with DecisionLog(tmp_path / "one-machine.db") as sqlite_log:
        assert fleet_counts(sqlite_log) is None
