"""Hostile ack files beside the reload board (`imad.serve.reload.acks`): whatever lies in the
run's directory under an ack's name, a reloading worker never fails on it and never counts it
as a sibling's answer — it is passed over, and a sibling that wrote nothing readable is
reported as silent (503 `reload_incomplete`), never as agreeing."""

from __future__ import annotations

import json
import os

import pytest

from imad.errors import ServeError
from imad.serve.reload.acks import RELOADED, WorkerAck, await_siblings, fleet_agrees, live_acks, parse_ack

SIBLING = os.getppid()
GOOD = {"pid": SIBLING, "generation": 2, "result": "reloaded", "router_hash": "a" * 64, "error": None}

ACK_FILES = [  # (id, file content)
    ("empty", b""),
    ("not JSON", b"{pid: 1"),
    ("truncated", json.dumps(GOOD).encode()[:30]),
    ("a list", b"[1, 2]"),
    ("a number", b"42"),
    ("null", b"null"),
    ("not UTF-8", b"\xff\xfe{}"),
    ("NaN generation", json.dumps(GOOD).replace('"generation": 2', '"generation": NaN').encode()),
    ("pid missing", json.dumps({**GOOD, "pid": None}).encode()),
    ("pid a string", json.dumps({**GOOD, "pid": str(SIBLING)}).encode()),
    ("pid a boolean", json.dumps({**GOOD, "pid": True}).encode()),
    ("pid negative", json.dumps({**GOOD, "pid": -SIBLING}).encode()),
    ("pid huge", json.dumps({**GOOD, "pid": 10**30}).encode()),
    ("generation zero", json.dumps({**GOOD, "generation": 0}).encode()),
    ("generation a float", json.dumps({**GOOD, "generation": 2.0}).encode()),
    ("result unknown", json.dumps({**GOOD, "result": "maybe"}).encode()),
    ("result missing", json.dumps({k: v for k, v in GOOD.items() if k != "result"}).encode()),
    ("hash empty", json.dumps({**GOOD, "router_hash": ""}).encode()),
    ("hash a number", json.dumps({**GOOD, "router_hash": 7}).encode()),
    ("error an object", json.dumps({**GOOD, "error": {"why": 1}}).encode()),
    ("deep nesting", b'{"pid": ' + b"[" * 5000 + b"]" * 5000 + b"}"),
    ("large", json.dumps({**GOOD, "error": "x" * 2_000_000, "pid": "no"}).encode()),
]


@pytest.mark.parametrize("content", [case[1] for case in ACK_FILES], ids=[case[0] for case in ACK_FILES])
def test_an_unreadable_ack_is_passed_over_and_its_worker_reported_silent(tmp_path, content):
    (tmp_path / f"ack-{SIBLING}.json").write_bytes(content)
    assert live_acks(tmp_path) == {}
    siblings = await_siblings(tmp_path, 2, 1, timeout_s=0.1)
    with pytest.raises(ServeError) as raised:
        fleet_agrees(WorkerAck(os.getpid(), 2, RELOADED, "a" * 64), siblings, 1, waited_s=0.1)
    assert raised.value.status == 503 and "did not answer" in raised.value.message


def test_an_ack_under_another_workers_name_is_passed_over(tmp_path):
    (tmp_path / "ack-1.json").write_text(json.dumps(GOOD))  # the file says it is SIBLING's
    assert live_acks(tmp_path) == {}


def test_a_directory_under_an_acks_name_is_passed_over(tmp_path):
    (tmp_path / f"ack-{SIBLING}.json").mkdir()
    assert live_acks(tmp_path) == {}


def test_an_unreadable_ack_file_is_passed_over(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode")
    path = tmp_path / f"ack-{SIBLING}.json"
    path.write_text(json.dumps(GOOD))
    path.chmod(0)
    assert live_acks(tmp_path) == {}


def test_a_good_ack_beside_bad_ones_still_counts(tmp_path):
    (tmp_path / "ack-1.json").write_bytes(b"garbage")
    (tmp_path / "ack-x.json").write_text(json.dumps(GOOD))
    (tmp_path / f"ack-{SIBLING}.json").write_text(json.dumps(GOOD))
    assert list(live_acks(tmp_path)) == [SIBLING]


class _Routers:
    """What `ReloadBoard.acknowledge` reads of a worker's ServingRouters."""

    def __init__(self, board_generation: int, router_hash: str) -> None:
        self.board_generation = board_generation
        self.current = type("Generation", (), {"identity": type("Identity", (), {"hash": router_hash})})


def test_a_follow_that_a_later_reload_overtook_writes_no_stale_ack(tmp_path):
    """Seen with 6 concurrent reloads to `--workers 2`: this worker followed record 2 (worker A's
    router, hash a…) but its own POST reload (record 3, hash b…) took the reload lock first; the
    follow was then skipped and acked record 2 with hash b…, so worker A answered 503
    'reload_incomplete … serve different routers' instead of 409 reload_superseded."""
    from imad.serve.reload.board import ReloadBoard

    board = ReloadBoard(tmp_path / "reload.json", workers=2)
    routers = _Routers(board_generation=3, router_hash="b" * 64)
    board.acknowledge(3, routers)  # its own reload's answer
    board.acknowledge(2, routers)  # the overtaken follow's
    assert parse_ack((tmp_path / f"ack-{os.getpid()}.json").read_bytes()).generation == 3
    (tmp_path / f"ack-{os.getpid()}.json").unlink()
    board.acknowledge(2, routers)  # overtaken before its own answer was written: still nothing
    assert not (tmp_path / f"ack-{os.getpid()}.json").exists()
    mine = WorkerAck(SIBLING, 2, RELOADED, "a" * 64)
    later = WorkerAck(os.getpid(), 3, RELOADED, "b" * 64)
    with pytest.raises(ServeError) as raised:  # what worker A makes of the later answer
        fleet_agrees(mine, {later.pid: later}, 1)
    assert raised.value.status == 409 and raised.value.code == "reload_superseded"
