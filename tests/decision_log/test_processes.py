"""The decision log under several real processes (issue 32 item 2): concurrent writers lose and
duplicate no row, and a writer killed with SIGKILL leaves a file that opens with every row it
had committed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

from imad.decision_log import DecisionLog
from imad.decision_log.location import open_for_reading

WRITERS = 4
ROWS_EACH = 300
SHARED = 25  # ids every writer records: each must be stored once

WRITER = textwrap.dedent("""
    import json, sys
    from imad.decision_log import DecisionLog
    path, name, count, shared = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    log = DecisionLog(path, batch_size=16)
    for index in range(count):
        log.record({"response_id": f"{name}-{index}", "p": index / count, "reasons": [name]})
        if index < shared:
            log.record({"response_id": f"shared-{index}", "p": 0.5})
    log.close()
    print(json.dumps({"written": log.stats["written"], "duplicates": log.stats["duplicates"],
                      "dropped": sum(log.stats.group("dropped").values())}))
""")

KILLED = textwrap.dedent("""
    import sys
    from imad.decision_log import DecisionLog
    log = DecisionLog(sys.argv[1], batch_size=7)
    for index in range(10_000_000):
        log.record({"response_id": f"row-{index}", "p": 0.5, "features": {"n": index}})
        if index % 10 == 9:
            log.flush()
            print(index + 1, flush=True)
""")


def test_concurrent_processes_lose_and_duplicate_nothing(tmp_path):
    path = tmp_path / "log.db"
    DecisionLog(path).close()  # the schema exists before the race (creation races: next test)
    children = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{k}", str(ROWS_EACH),
                                  str(SHARED)], stdout=subprocess.PIPE, text=True)
                for k in range(WRITERS)]
    reports = [json.loads(child.communicate(timeout=300)[0]) for child in children]
    assert all(child.returncode == 0 for child in children)
    store = open_for_reading(path)
    ids = [row["response_id"] for row in store.rows()]
    store.close()
    expected = {f"w{k}-{i}" for k in range(WRITERS) for i in range(ROWS_EACH)}
    expected |= {f"shared-{i}" for i in range(SHARED)}
    assert len(ids) == len(set(ids)) == len(expected) and set(ids) == expected
    assert sum(report["written"] for report in reports) == len(expected)
    assert sum(report["duplicates"] for report in reports) == (WRITERS - 1) * SHARED
    assert all(report["dropped"] == 0 for report in reports)


def test_processes_creating_a_new_log_at_once_create_it_once(tmp_path):
    path = tmp_path / "new.db"
    children = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"n{k}", "20", "0"],
                                 stdout=subprocess.PIPE, text=True) for k in range(WRITERS)]
    reports = [json.loads(child.communicate(timeout=300)[0]) for child in children]
    assert [report["written"] for report in reports] == [20] * WRITERS
    store = open_for_reading(path)
    assert store.count() == 20 * WRITERS
    assert store.connection.execute("SELECT count(*) FROM meta WHERE key = 'format'").fetchone()[0] == 1
    store.close()


def test_a_writer_killed_mid_stream_leaves_every_committed_row(tmp_path):
    path = tmp_path / "log.db"
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(path)], stdout=subprocess.PIPE,
                             text=True)
    committed = 0
    for line in child.stdout:
        committed = int(line)
        if committed >= 300:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    store = open_for_reading(path)
    assert store.connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    numbers = sorted(int(row["response_id"].split("-")[1]) for row in store.rows())
    store.close()
    assert len(numbers) >= committed
    assert numbers == list(range(len(numbers)))  # a prefix: nothing committed is missing
    with DecisionLog(path) as log:  # the writer after the crash appends as usual
        log.record({"response_id": "after-the-crash", "p": 0.1})
    assert log.stats["written"] == 1


def test_a_forked_child_writes_through_its_own_thread_and_connection(tmp_path):
    path = tmp_path / "log.db"
    log = DecisionLog(path)
    log.record({"response_id": "parent-0"})
    log.flush()
    child = os.fork()
    if child == 0:  # the child: record, close, and leave without running the parent's cleanup
        status = 1
        try:
            log.record({"response_id": "child-0"})
            log.close()
            status = 0 if log.stats["written"] == 2 else 2  # the parent's row counted before the fork
        finally:
            os._exit(status)
    _, status = os.waitpid(child, 0)
    log.record({"response_id": "parent-1"})
    log.close()
    assert os.waitstatus_to_exitcode(status) == 0
    store = open_for_reading(path)
    assert sorted(row["response_id"] for row in store.rows()) == ["child-0", "parent-0", "parent-1"]
    store.close()
