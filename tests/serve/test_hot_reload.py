"""Hot reload as a user does it (issue 32, item 6): a real `imad serve` in front of a loopback stub,
four reloads alternating two shipped routers while 8 client threads send 320 requests, then a
damaged checkpoint's reload; with one process and with `--workers 2`.

Every request is answered 200 and its decision names a router that was in service; a reload's
200 lists every worker serving the new router, and from then on /health of every worker names
it (under --workers the answer waited for the sibling); a request sent after a reload answered
is scored by the new router; the damaged checkpoint is refused
with a 422 and the last router keeps serving; /metrics counts the reloads by result. A request
held in its debate across a reload finishes on the router it started with. Nothing is timed
(benchmarks/bench_reload.py measures the reload's latency).
"""

from __future__ import annotations

import queue
import shutil
import threading

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("spacy")

from imad.decision_log.answer_row import router_identity  # noqa: E402
from imad.router import Router, available_routers  # noqa: E402
from imad.router.registry import shipped_directory  # noqa: E402
from imad.serve.metrics import sample_values  # noqa: E402
from tests.support.serve_process import WAIT_S, ServeProcess, upstream_stub, wait_for  # noqa: E402

pytestmark = pytest.mark.slow

FIRST, SECOND = "imad-router-v2", "imad-router-v1"
CLIENTS, REQUESTS, BATCH = 8, 320, 32
"""Five rounds (four reloads and the damaged one) of a batch during and a batch after each."""


def test_two_shipped_routers_are_shipped():
    assert {FIRST, SECOND} <= set(available_routers())


def counted_batches(metrics: str) -> float:
    return sum(value for _, value in sample_values(metrics, "imad_score_batch_size_count"))


def reload(server: ServeProcess, router: str) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/imad/admin/reload", json={"router": router}, timeout=WAIT_S)


def serving_hashes(server: ServeProcess, workers: int, want: str) -> dict[int, str]:
    """Poll /health (a new connection each time, so any worker may answer) until `workers`
    processes have reported their router's hash, each `want` from the first answer on."""
    seen: dict[int, str] = {}

    def every_worker_serves_it() -> bool:
        health = server.health()
        assert health["router"]["hash"] == want, f"worker {health['worker_pid']} serves another router"
        seen[health["worker_pid"]] = health["router"]["hash"]
        return len(seen) == workers

    wait_for(every_worker_serves_it, f"{workers} worker(s) serving router {want[:12]}")
    return seen


@pytest.mark.parametrize("workers", [1, 2], ids=["one process", "--workers 2"])
def test_reloads_under_load_lose_no_request(tmp_path, workers):
    hashes = {name: router_identity(Router.load(name)).hash for name in (FIRST, SECOND)}
    damaged = shutil.copytree(shipped_directory() / FIRST, tmp_path / "damaged")
    (damaged / "model.safetensors").write_bytes((damaged / "model.safetensors").read_bytes()[:500])
    work: queue.Queue = queue.Queue()
    answers: list[tuple[str | None, int, str | None]] = []  # (hash it must name, status, named)
    with upstream_stub() as upstream:
        server = ServeProcess(shipped_directory() / FIRST, upstream, tmp_path,
                              "--workers", str(workers), "--scoring-processes", "1")

        def client() -> None:
            with httpx.Client(timeout=WAIT_S) as http:
                while (job := work.get(timeout=WAIT_S)) is not None:
                    index, must_name = job
                    response = http.post(f"{server.url}/v1/chat/completions", json={
                        "model": "imad", "messages": [{"role": "user",
                                                       "content": f"Which number is tagged #{index}?"}]})
                    named = response.json()["imad"]["router_hash"] if response.status_code == 200 else None
                    answers.append((must_name, response.status_code, named))

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        try:
            server.wait_ready(workers)
            assert serving_hashes(server, workers, hashes[FIRST])
            for thread in threads:
                thread.start()
            serving = FIRST
            for round_, target in enumerate([SECOND, FIRST, SECOND, FIRST, str(damaged)]):
                for index in range(BATCH):  # these run while the checkpoint loads
                    work.put((2 * round_ * BATCH + index, None))
                response = reload(server, target)
                if target == str(damaged):
                    assert response.status_code == 422, response.text
                    assert "model.safetensors" in response.json()["error"]["message"]
                else:
                    assert response.status_code == 200, response.text
                    assert response.json()["router"]["hash"] == hashes[target]
                    answered = response.json()["workers"]
                    assert len({worker["pid"] for worker in answered}) == workers
                    assert {worker["router_hash"] for worker in answered} == {hashes[target]}
                    serving = target
                serving_hashes(server, workers, hashes[serving])
                for index in range(BATCH):  # sent once every worker serves the new router
                    work.put(((2 * round_ + 1) * BATCH + index, hashes[serving]))
                done = 2 * BATCH * (round_ + 1)  # answered before the next reload, so each
                # late request is scored by the router it must name
                wait_for(lambda done=done: len(answers) == done, "this round's answers")
            for _ in threads:
                work.put(None)
            for thread in threads:
                thread.join(WAIT_S)
            metrics = server.metrics()
        finally:
            server.stop()
    assert len(answers) == REQUESTS
    assert [status for _, status, _ in answers] == [200] * REQUESTS
    assert {named for _, _, named in answers} <= set(hashes.values())
    late = [(must, named) for must, _, named in answers if must is not None]
    assert len(late) == REQUESTS // 2 and all(must == named for must, named in late)
    reloads = {labels["result"]: value
               for labels, value in sample_values(metrics, "imad_router_reloads_total")}
    assert reloads == {"ok": 4.0 * workers, "refused": 1.0}  # a refusal is not passed on


def test_a_request_in_flight_finishes_on_the_router_it_started_with(tmp_path):
    hashes = {name: router_identity(Router.load(name)).hash for name in (FIRST, SECOND)}
    with upstream_stub() as upstream:
        server = ServeProcess(shipped_directory() / FIRST, upstream, tmp_path, "--scoring-processes", "1")
        try:
            server.wait_ready()
            first_children = set(server.spawned(server.root))
            assert len(first_children) == 1  # the scoring process
            upstream.hold_debates.set()
            held: dict[str, httpx.Response] = {}
            body = {"model": "imad-1.0",  # τ 1: every answer escalates to a debate, held there
                    "messages": [{"role": "user", "content": "Which number is tagged #3?"}]}
            thread = threading.Thread(target=lambda: held.setdefault("response", httpx.post(
                f"{server.url}/v1/chat/completions", json=body, timeout=WAIT_S)))
            thread.start()
            assert upstream.debate_started.wait(WAIT_S)
            assert reload(server, SECOND).status_code == 200
            assert server.health()["router"]["hash"] == hashes[SECOND]
            assert thread.is_alive()  # still in its debate
            upstream.release()
            thread.join(WAIT_S)
            response = held["response"]
            assert response.status_code == 200
            assert response.json()["imad"]["router_hash"] == hashes[FIRST]
            assert response.json()["imad"]["router_name"] == FIRST
            # the new router's own scoring process takes over from the server's thread, and the
            # old one ends with the last request that held it
            wait_for(lambda: server.events("router_scoring_processes_ready"), "the new scoring process")
            assert server.events("router_scoring_processes_ready")[0]["router_hash"] == hashes[SECOND]
            wait_for(lambda: len(server.spawned(server.root)) == 1
                     and not set(server.spawned(server.root)) & first_children,
                     "the old scoring process to end")
            after = server.post(4)
            assert after.status_code == 200 and after.json()["imad"]["router_name"] == SECOND
            batches = counted_batches(server.metrics())
            assert server.post(5).status_code == 200
            assert counted_batches(server.metrics()) == batches + 1
            assert "ScoringProcessError" not in server.metrics()
        finally:
            server.stop()


def warming_or_serving(server: ServeProcess) -> int:
    """The server's live scoring processes (a killed one not yet reaped does not count)."""
    import psutil

    live = 0
    for child in server.root.children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "spawn_main" in " ".join(child.cmdline()):
                live += 1
        except psutil.Error:  # ended while we looked
            continue
    return live


def test_a_burst_of_reloads_warms_one_set_of_scoring_processes_at_a_time(tmp_path):
    """Each reload answers once its router scores in the server's thread, seconds before its
    own scoring process is warm; a newer reload ends the one still warming for the last, so six
    reloads in a row leave one process warming (before: six, ~0.5 GB each)."""
    targets = [SECOND, FIRST] * 3
    final = router_identity(Router.load(targets[-1])).hash
    with upstream_stub() as upstream:
        server = ServeProcess(shipped_directory() / FIRST, upstream, tmp_path, "--scoring-processes", "1")
        try:
            server.wait_ready()
            for target in targets:
                assert reload(server, target).status_code == 200
            assert warming_or_serving(server) <= 2  # the last one's, and at most one being ended
            wait_for(lambda: [event for event in server.events("router_scoring_processes_ready")
                              if event["router_hash"] == final], "the last router's scoring process")
            wait_for(lambda: warming_or_serving(server) == 1, "one scoring process left")
            assert not server.events("scoring_processes_not_started")  # an ended warm-up is no error
            answer = server.post(1)
            assert answer.status_code == 200 and answer.json()["imad"]["router_hash"] == final
        finally:
            server.stop()
