"""A reload under --workers answers for every worker (`imad.serve.reload.board`,
`imad.serve.reload.acks`), on a real loopback server whose app follows a reload board as a
worker of a two-worker run does; the sibling worker is played by the test, which answers the
board's records in an ack file as a real sibling would (the real two-worker run is in
test_hot_reload.py)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")

from imad.decision_log.answer_row import router_identity  # noqa: E402
from imad.router import Router  # noqa: E402
from imad.serve import BackgroundServer, ServeSettings, create_app  # noqa: E402
from imad.serve.reload import acks as reload_acks  # noqa: E402
from imad.serve.reload.acks import REFUSED, RELOADED, WorkerAck, parse_ack, write_ack  # noqa: E402
from imad.serve.reload.board import BOARD_FILE, ReloadBoard  # noqa: E402
from tests.router.router_helpers import make_router  # noqa: E402
from tests.support.serve_process import wait_for  # noqa: E402
from tests.support.serving import echo_factory  # noqa: E402

SIBLING = os.getppid()  # a live process other than this one stands for the sibling worker


@pytest.fixture
def run(tmp_path) -> Iterator[dict]:
    """A server that is one of two workers, its board, and two checkpoints to reload."""
    first = make_router(seed=3).save(tmp_path / "first")
    second = make_router(seed=4).save(tmp_path / "second")
    board = ReloadBoard(tmp_path / "board" / BOARD_FILE, workers=2)
    board.path.parent.mkdir()
    settings = replace(ServeSettings(), scoring_processes=0)
    app = create_app(settings, echo_factory(router=Router.load(first)), router_spec=str(first), board=board)
    server = BackgroundServer(app, settings).start()
    yield {"server": server, "board": board, "first": first, "second": second,
           "hashes": {name: router_identity(Router.load(path)).hash
                      for name, path in (("first", first), ("second", second))}}
    server.stop(timeout_s=15)


def sibling_answers(board: ReloadBoard, answer: Callable[[dict], WorkerAck]) -> threading.Thread:
    """A thread that answers the board's next record as the sibling worker."""

    def play() -> None:
        wait_for(lambda: board.read() is not None, "the reload board's record")
        write_ack(board.path.parent, answer(board.read()))

    thread = threading.Thread(target=play)
    thread.start()
    return thread


def reload(server: BackgroundServer, checkpoint: Path) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{server.port}/v1/imad/admin/reload",
                      json={"router": str(checkpoint)}, timeout=60)


def serving(server: BackgroundServer) -> str:
    return httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=30).json()["router"]["hash"]


def test_the_answer_waits_for_the_sibling_and_lists_both_workers(run):
    sibling = sibling_answers(run["board"], lambda record: WorkerAck(
        SIBLING, record["generation"], RELOADED, record["hash"]))
    response = reload(run["server"], run["second"])
    sibling.join()
    assert response.status_code == 200, response.text
    new = run["hashes"]["second"]
    assert response.json()["workers"] == [{"pid": os.getpid(), "router_hash": new},
                                          {"pid": SIBLING, "router_hash": new}]
    assert run["board"].read()["hash"] == new  # what the sibling must load


def test_a_sibling_that_refuses_makes_the_answer_a_503_naming_it(run):
    sibling = sibling_answers(run["board"], lambda record: WorkerAck(
        SIBLING, record["generation"], REFUSED, run["hashes"]["first"], "its file changed"))
    response = reload(run["server"], run["second"])
    sibling.join()
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "reload_incomplete"
    assert f"worker {SIBLING} refused (its file changed)" in error["message"]
    assert serving(run["server"]) == run["hashes"]["second"]  # this worker did take it


def test_a_silent_sibling_makes_the_answer_a_503_after_the_wait(run, monkeypatch):
    monkeypatch.setattr(reload_acks, "SIBLING_WAIT_S", 0.5)
    response = reload(run["server"], run["second"])
    assert response.status_code == 503, response.text
    assert "1 more worker(s) did not answer within 0.5 s" in response.json()["error"]["message"]


def test_a_later_reload_makes_the_answer_a_409(run):
    sibling = sibling_answers(run["board"], lambda record: WorkerAck(
        SIBLING, record["generation"] + 1, RELOADED, run["hashes"]["first"]))
    response = reload(run["server"], run["second"])
    sibling.join()
    assert response.status_code == 409, response.text
    assert response.json()["error"]["code"] == "reload_superseded"


def test_a_record_whose_checkpoint_changed_is_refused_and_answered(run):
    """The sibling's side: a record naming a hash the file no longer has is refused, the old
    router keeps serving, and the refusal is written as this worker's answer."""
    before = serving(run["server"])
    record = {"generation": 1, "router": str(run["second"]), "hash": "0" * 64, "pid": SIBLING}
    run["board"].path.write_text(json.dumps(record))
    ack_file = run["board"].path.parent / f"ack-{os.getpid()}.json"
    wait_for(ack_file.exists, "this worker's answer to the record")
    ack = parse_ack(ack_file.read_bytes())
    assert ack is not None and (ack.generation, ack.result, ack.router_hash) == (1, REFUSED, before)
    assert "changed in between" in ack.error
    assert serving(run["server"]) == before


def test_a_record_whose_checkpoint_matches_is_taken_and_answered(run):
    record = {"generation": 1, "router": str(run["second"]), "hash": run["hashes"]["second"],
              "pid": SIBLING}
    run["board"].path.write_text(json.dumps(record))
    ack_file = run["board"].path.parent / f"ack-{os.getpid()}.json"
    wait_for(ack_file.exists, "this worker's answer to the record")
    assert parse_ack(ack_file.read_bytes()) == WorkerAck(os.getpid(), 1, RELOADED, run["hashes"]["second"])
    assert serving(run["server"]) == run["hashes"]["second"]
