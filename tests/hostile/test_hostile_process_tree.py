"""Faults of `imad serve`'s process tree, on real processes (issue 34, items 2, 3 and 5).

Each test starts `python -m imad.cli.main serve` on a loopback port in front of a loopback stub
upstream (tests/support/serve_process.py), then kills, stops or terminates one process of its
tree: the supervisor of `--workers 2`, a worker, a scoring process (SIGKILL), a scoring process
that hangs (SIGSTOP, never continued), the server in the middle of a streamed debate (SIGTERM).
Each asserts what an operator relies on: no process of the tree left behind and the port free
once the server is gone, no slot stuck (`in_flight` back to 0, new requests answered 200), no
500 and no traceback in the log, and every request counted once in /metrics. Waits poll with a
deadline; nothing is timed (the times are measured in benchmarks/bench_process_tree.py).
"""

from __future__ import annotations

import os
import signal
import threading

import psutil
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("spacy")

from imad.serve.metrics import sample_values  # noqa: E402
from tests.router.router_helpers import make_router  # noqa: E402
from tests.support.serve_process import (  # noqa: E402
    ServeProcess,
    gone,
    port_is_free,
    upstream_stub,
    wait_for,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router(seed=11).save(tmp_path_factory.mktemp("router") / "router")


@pytest.fixture
def upstream():
    with upstream_stub() as stub:
        yield stub


STOPPED = (0, -signal.SIGTERM)
"""Exit statuses of a server stopped by SIGTERM (uvicorn re-raises the signal once it has
shut down, so the parent sees the signal)."""


def counted(text: str, metric: str = "imad_requests_total", **labels: str) -> float:
    """The sum of a counter's samples whose labels include `labels`."""
    return sum(value for found, value in sample_values(text, metric)
               if all(found.get(key) == wanted for key, wanted in labels.items()))


def assert_quiet(server: ServeProcess) -> None:
    log = server.log.read_text(errors="replace")
    assert "Traceback" not in log, log[-4000:]
    assert not [line for line in server.events("chat_completion") if line["status"] == 500]


def test_sigkill_of_the_supervisor_takes_the_whole_tree_and_frees_the_port(router_dir, upstream, tmp_path):
    server = ServeProcess(router_dir, upstream, tmp_path, "--workers", "2", "--scoring-processes", "1",
                          "--tau", "0")
    try:
        server.wait_ready(workers=2)
        assert server.post(1).status_code == 200
        tree = [process.pid for process in server.tree()]
        workers = server.spawned(server.root)
        assert len(workers) == 2 and len(tree) >= 5  # supervisor, 2 workers, 2 scoring processes
        assert list(tmp_path.glob("imad-metrics-*"))  # this run's metrics directory
        server.process.kill()
        wait_for(lambda: all(gone(pid) for pid in tree), "every process of the tree ended", 60)
        assert port_is_free(server.port)
        assert not list(tmp_path.glob("imad-metrics-*")), "the run's metrics directory was left"
    finally:
        server.stop()


def test_sigkill_of_a_worker_restarts_it_and_loses_no_count(router_dir, upstream, tmp_path):
    server = ServeProcess(router_dir, upstream, tmp_path, "--workers", "2", "--scoring-processes", "1",
                          "--tau", "0")
    try:
        server.wait_ready(workers=2)
        before = [server.post(index).status_code for index in range(4)]
        victim = server.spawned(server.root)[0]
        children = server.spawned(psutil.Process(victim))
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: all(gone(pid) for pid in [victim, *children]), "the worker and its children ended")
        server.wait_ready(workers=3)  # uvicorn's supervisor started a replacement
        after = [server.post(index).status_code for index in range(4, 8)]
        text = server.metrics()
        assert before + after == [200] * 8
        assert counted(text) == 8  # the dead worker's counts stay in the sum, once
        assert counted(text, "imad_in_flight") == 0  # its live gauge is dropped, not stuck
        tree = [process.pid for process in server.tree()]
        assert server.stop() in STOPPED
        wait_for(lambda: all(gone(pid) for pid in tree), "the tree ended after SIGTERM")
    finally:
        server.stop()
    assert_quiet(server)


def test_sigkill_of_scoring_processes_is_healed_and_the_stop_is_quiet(router_dir, upstream, tmp_path):
    server = ServeProcess(router_dir, upstream, tmp_path, "--scoring-processes", "1", "--tau", "0")
    try:
        server.wait_ready()
        statuses = [server.post(0).status_code]
        killed = []
        for round_ in range(3):
            [child] = server.spawned(server.root)
            os.kill(child, signal.SIGKILL)
            killed.append(child)
            wait_for(lambda child=child: gone(child), "the killed scoring process ended")
            statuses += [server.post(10 * round_ + index).status_code for index in range(1, 4)]
        text = server.metrics()
        health = server.health()
        tree = [process.pid for process in server.tree()]
        assert server.stop() in STOPPED
        wait_for(lambda: all(gone(pid) for pid in tree), "the tree ended after SIGTERM")
    finally:
        server.stop()
    assert statuses == [200] * 10
    assert counted(text) == 10 and counted(text, "imad_decisions_total") == 10
    assert health["in_flight"] == 0
    assert server.events("server_stopped")
    assert_quiet(server)


def test_a_hung_scoring_process_is_killed_and_replaced_so_new_requests_are_answered(
        router_dir, upstream, tmp_path):
    server = ServeProcess(router_dir, upstream, tmp_path, "--scoring-processes", "1", "--tau", "0",
                          "--request-timeout", "3", "--max-concurrency", "2")
    try:
        server.wait_ready()
        assert server.post(0).status_code == 200
        [child] = server.spawned(server.root)
        os.kill(child, signal.SIGSTOP)  # never continued
        held = server.post_together([1, 2])  # answered by the in-process fallback, or timed out
        assert len(held) == 2 and set(held.values()) <= {200, 504}, held
        wait_for(lambda: gone(child), "the hung scoring process was killed")
        wait_for(lambda: server.health()["in_flight"] == 0, "the held slots were freed")
        after = [server.post(index).status_code for index in range(3, 7)]
        text = server.metrics()
        assert after == [200] * 4
        assert counted(text) == 7
        assert counted(text, "imad_decisions_total") == 7
        [hung] = server.events("scoring_process_hung")
        assert hung["pid"] == child and hung["deadline_s"] == 3
        assert server.stop() in STOPPED
    finally:
        server.stop()
    assert_quiet(server)


def test_sigterm_during_a_streamed_debate_ends_it_with_one_counted_503(router_dir, upstream, tmp_path):
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    server = ServeProcess(router_dir, upstream, tmp_path, "--scoring-processes", "0", "--tau", "1",
                          "--shutdown-timeout", "2",
                          env={"PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)})
    upstream.hold_debates.set()
    try:
        server.wait_ready()
        answer = {}
        client = threading.Thread(target=lambda: answer.setdefault("r", server.post(5, stream=True)))
        client.start()
        assert upstream.debate_started.wait(120)
        server.process.terminate()
        client.join(60)
        response = answer["r"]
        upstream.release()  # the cancelled pipeline's upstream call may now end
        assert server.process.wait(120) in STOPPED
    finally:
        server.stop()
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "server_shutting_down"
    [logged] = server.events("chat_completion")
    assert logged["status"] == 503 and logged["stream"] is True
    from prometheus_client import CollectorRegistry, generate_latest, multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(metrics_dir))
    text = generate_latest(registry).decode()
    assert counted(text) == 1 and counted(text, code="503") == 1
    assert counted(text, "imad_decisions_total") == 1
    assert counted(text, "imad_decisions_total", outcome="cancelled") == 1
    assert_quiet(server)


def test_sigterm_under_shadow_abandons_the_queued_debates_instead_of_running_them(router_dir, upstream,
                                                                                    tmp_path):
    """A queue of shadow debates does not hold SIGTERM: the queued ones are abandoned, the
    running one (its upstream call held, never answered) is cancelled once --shutdown-timeout
    has passed, both are counted and logged once, and the tree ends without another upstream
    call. The seconds it takes are in benchmarks/README.md (shadow shutdown)."""
    upstream.hold_debates.set()
    server = ServeProcess(router_dir, upstream, tmp_path, "--shadow", "--shadow-debate-rate", "1",
                          "--shutdown-timeout", "1", "--scoring-processes", "0", "--tau", "0",
                          "--decision-log", str(tmp_path / "decisions.db"))
    try:
        server.wait_ready()
        assert [server.post(index).status_code for index in range(6)] == [200] * 6
        assert upstream.debate_started.wait(60)  # the first debate holds; five more queue behind it
        held = upstream.calls["debate"]
        tree = [process.pid for process in server.tree()]
        server.process.terminate()
        assert server.process.wait(60) in STOPPED  # although the held call is never answered
        wait_for(lambda: all(gone(pid) for pid in tree), "every process of the tree ended", 60)
        [abandoned] = server.events("shadow_debates_abandoned")
        assert abandoned["abandoned"] == 6 and abandoned["shutdown_timeout_s"] == 1.0
        assert upstream.calls["debate"] == held  # no queued debate started after SIGTERM
        assert_quiet(server)
    finally:
        upstream.release()
        server.stop()
