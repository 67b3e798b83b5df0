"""The workers' answers to a reload (`imad.serve.reload.acks`): written, read back, waited for,
and judged — the fleet agrees only when every sibling serves the reloading worker's router."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from imad.errors import ServeError
from imad.serve.reload.acks import (
    REFUSED,
    RELOADED,
    WorkerAck,
    await_siblings,
    fleet_agrees,
    live_acks,
    parse_ack,
    write_ack,
)

NEW, OLD = "a" * 64, "b" * 64
SIBLING = os.getppid()  # a live process that is not this one, as a sibling worker is


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_an_ack_round_trips_through_its_file(tmp_path):
    ack = WorkerAck(SIBLING, 3, REFUSED, OLD, "config.json is missing")
    write_ack(tmp_path, ack)
    assert (tmp_path / f"ack-{SIBLING}.json").is_file()
    assert parse_ack((tmp_path / f"ack-{SIBLING}.json").read_bytes()) == ack
    assert live_acks(tmp_path) == {SIBLING: ack}


def test_a_later_ack_replaces_the_earlier_one_of_its_worker(tmp_path):
    write_ack(tmp_path, WorkerAck(SIBLING, 1, RELOADED, OLD))
    write_ack(tmp_path, WorkerAck(SIBLING, 2, RELOADED, NEW))
    assert live_acks(tmp_path)[SIBLING].generation == 2


def test_a_dead_workers_ack_is_passed_over(tmp_path):
    write_ack(tmp_path, WorkerAck(dead_pid(), 5, RELOADED, NEW))
    assert live_acks(tmp_path) == {}


def test_the_wait_ends_as_soon_as_every_sibling_answered(tmp_path):
    def sibling() -> None:
        write_ack(tmp_path, WorkerAck(SIBLING, 4, RELOADED, NEW))

    writer = threading.Thread(target=sibling)  # answers before or during the wait: both end it
    writer.start()
    answered = await_siblings(tmp_path, 4, 1, timeout_s=60)
    writer.join()
    assert answered == {SIBLING: WorkerAck(SIBLING, 4, RELOADED, NEW)}


def test_an_answer_to_an_older_record_does_not_count(tmp_path):
    write_ack(tmp_path, WorkerAck(SIBLING, 3, RELOADED, OLD))
    assert await_siblings(tmp_path, 4, 1, timeout_s=0.1) == {}


def test_this_workers_own_ack_is_not_a_sibling(tmp_path):
    write_ack(tmp_path, WorkerAck(os.getpid(), 4, RELOADED, NEW))
    assert await_siblings(tmp_path, 4, 1, timeout_s=0.1) == {}


def test_the_fleet_agrees_when_every_sibling_serves_the_new_router():
    mine = WorkerAck(os.getpid(), 4, RELOADED, NEW)
    sibling = WorkerAck(SIBLING, 4, RELOADED, NEW)
    assert fleet_agrees(mine, {SIBLING: sibling}, 1) == [mine, sibling]


@pytest.mark.parametrize(("siblings", "status", "code", "words"), [
    ({SIBLING: WorkerAck(SIBLING, 4, REFUSED, OLD, "its hash changed")}, 503, "reload_incomplete",
     f"worker {SIBLING} refused (its hash changed), serves bbbbbbbbbbbb"),
    ({SIBLING: WorkerAck(SIBLING, 4, RELOADED, OLD)}, 503, "reload_incomplete",
     f"worker {SIBLING} serves bbbbbbbbbbbb"),
    ({}, 503, "reload_incomplete", "1 more worker(s) did not answer within 7 s"),
    ({SIBLING: WorkerAck(SIBLING, 5, RELOADED, OLD)}, 409, "reload_superseded",
     "another reload (board record 5) came after this one (record 4)"),
], ids=["a sibling refused", "a sibling serves another hash", "a sibling is silent", "a later reload"])
def test_a_fleet_that_disagrees_is_an_error_naming_each_worker(siblings, status, code, words):
    mine = WorkerAck(os.getpid(), 4, RELOADED, NEW)
    with pytest.raises(ServeError) as raised:
        fleet_agrees(mine, siblings, 1, waited_s=7)
    assert (raised.value.status, raised.value.code) == (status, code)
    assert words in raised.value.message
    assert f"worker {os.getpid()} serves aaaaaaaaaaaa" in raised.value.message
