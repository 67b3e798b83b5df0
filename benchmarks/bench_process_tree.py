"""How fast `imad serve`'s process tree goes away and heals (issue 34).

    python benchmarks/bench_process_tree.py [--repeats 3]

Starts real `imad serve` processes on loopback in front of the loopback stub upstream of the
fault tests (tests/support/serve_process.py) and measures, `--repeats` times each:

- vanish: `--workers 2 --scoring-processes 1`; SIGKILL of the supervisor → every process of
  the tree (2 workers, 2 scoring processes, multiprocessing's resource trackers) ended and the
  port free (polled every 50 ms);
- recover: `--scoring-processes 1 --request-timeout 3 --max-concurrency 2`; SIGSTOP of the
  scoring process (never continued), then two requests at once: from the SIGSTOP until a new
  request is answered 200, and that request's own latency (the lane scores in the server while
  the replacement warms up);
- kills (`--kills N`, default 39): `--scoring-processes 1`, one worker and `--workers 2`; 4
  client threads send 10 × N requests while another thread SIGKILLs a scoring process (in turn
  across workers) every 10th answer: every request must be answered 200; the slowest request,
  p50 and p99 (issue 34 found 14.9 s, 25.6 s with `--workers 2`, for 390 requests over 39 kills).
- shadow (`--shadow-queue N`, default 65): `--shadow --shadow-debate-rate 1 --shutdown-timeout
  10`, the upstream holding every debate call; N requests queue N shadow debates, then SIGTERM:
  the seconds until every process of the tree ended, the debates abandoned, and the upstream
  debate calls made after the SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.router.router_helpers import make_router  # noqa: E402
from tests.support.serve_process import ServeProcess, gone, port_is_free, upstream_stub, wait_for  # noqa: E402


def vanish_s(router_dir: Path, workdir: Path) -> float:
    with upstream_stub() as upstream:
        server = ServeProcess(router_dir, upstream, workdir, "--workers", "2", "--scoring-processes", "1",
                              "--tau", "0")
        try:
            server.wait_ready(workers=2)
            tree = [process.pid for process in server.tree()]
            server.process.kill()
            return wait_for(lambda: all(gone(pid) for pid in tree) and port_is_free(server.port),
                            "the tree ended", 60)
        finally:
            server.stop()


def recover_s(router_dir: Path, workdir: Path) -> tuple[float, float]:
    with upstream_stub() as upstream:
        server = ServeProcess(router_dir, upstream, workdir, "--scoring-processes", "1", "--tau", "0",
                              "--request-timeout", "3", "--max-concurrency", "2")
        try:
            server.wait_ready()
            assert server.post(0).status_code == 200
            [child] = server.spawned(server.root)
            clock = time.monotonic()
            os.kill(child, signal.SIGSTOP)
            server.post_together([1, 2])
            while True:
                started = time.monotonic()
                if server.post(3).status_code == 200:
                    return time.monotonic() - clock, time.monotonic() - started
        finally:
            server.stop()


def kills_under_load(router_dir: Path, workdir: Path, workers: int, kills: int) -> dict:
    """Latencies of 10 × `kills` requests from 4 clients while a scoring process is SIGKILLed
    after every 10th answer (see the module docstring)."""
    requests = 10 * kills
    with upstream_stub() as upstream:
        server = ServeProcess(router_dir, upstream, workdir, "--workers", str(workers),
                              "--scoring-processes", "1", "--tau", "0")
        try:
            server.wait_ready(workers=workers)
            answered = threading.Semaphore(0)
            latencies: list[float] = []
            statuses: list[int] = []
            killed: list[int] = []
            indices = iter(range(requests))
            lock = threading.Lock()

            def client() -> None:
                while True:
                    with lock:
                        index = next(indices, None)
                    if index is None:
                        return
                    started = time.monotonic()
                    status = server.post(index, timeout=120).status_code
                    with lock:
                        latencies.append(time.monotonic() - started)
                        statuses.append(status)
                    answered.release()

            def killer() -> None:
                for kill in range(kills):
                    for _ in range(10):
                        answered.acquire()
                    workers_now = server.spawned(server.root) if workers > 1 else [server.root.pid]
                    children = server.spawned(psutil.Process(workers_now[kill % len(workers_now)]))
                    if children:
                        os.kill(children[0], signal.SIGKILL)
                        killed.append(children[0])

            threads = [threading.Thread(target=client) for _ in range(4)]
            threads.append(threading.Thread(target=killer))
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            failed = len(server.events("scoring_process_failed"))
        finally:
            server.stop()
    ordered = sorted(latencies)
    return {"workers": workers, "requests": requests, "ok": statuses.count(200), "kills": len(killed),
            "failed_batches_logged": failed, "p50_s": statistics.median(ordered),
            "p99_s": ordered[round(0.99 * (len(ordered) - 1))], "max_s": ordered[-1]}


def shadow_shutdown(router_dir: Path, workdir: Path, queued: int) -> dict:
    with upstream_stub() as upstream:
        upstream.hold_debates.set()
        server = ServeProcess(router_dir, upstream, workdir, "--shadow", "--shadow-debate-rate", "1",
                              "--shutdown-timeout", "10", "--scoring-processes", "0", "--tau", "0")
        try:
            server.wait_ready()
            assert all(server.post(index).status_code == 200 for index in range(queued))
            assert upstream.debate_started.wait(60)
            calls = upstream.calls["debate"]
            tree = [process.pid for process in server.tree()]
            server.process.terminate()
            seconds = wait_for(lambda: all(gone(pid) for pid in tree), "the tree ended", 120)
            [line] = server.events("shadow_debates_abandoned")
            return {"seconds": seconds, "abandoned": line["abandoned"],
                    "calls_after": upstream.calls["debate"] - calls}
        finally:
            upstream.release()
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kills", type=int, default=39, help="scoring processes killed under load (0: skip)")
    parser.add_argument("--only-kills", action="store_true", help="skip the vanish and recover runs")
    parser.add_argument("--shadow-queue", type=int, default=65,
                        help="shadow debates queued at SIGTERM (0: skip)")
    parser.add_argument("--only-shadow", action="store_true", help="run the shadow shutdown alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tree-") as folder:
        workdir = Path(folder)
        router_dir = make_router(seed=11).save(workdir / "router")
        print(f"load average at start {os.getloadavg()}")
        repeats = 0 if args.only_kills or args.only_shadow else args.repeats
        vanish = [vanish_s(router_dir, workdir) for _ in range(repeats)]
        recover = [recover_s(router_dir, workdir) for _ in range(repeats)]
        kills = [kills_under_load(router_dir, workdir, workers, args.kills)
                 for workers in (1, 2) if args.kills > 0 and not args.only_shadow]
        shadow = (shadow_shutdown(router_dir, workdir, args.shadow_queue)
                  if args.shadow_queue > 0 and not args.only_kills else None)
        print(f"load average at end {os.getloadavg()}")
    if vanish:
        print("SIGKILL of the --workers 2 supervisor → tree gone, port free: "
              + ", ".join(f"{value:.2f}" for value in vanish)
              + f" s (median {statistics.median(vanish):.2f})")
        print("SIGSTOP of the scoring process → a new request answered 200: "
              + ", ".join(f"{total:.2f} s (that request {last:.2f} s)" for total, last in recover))
    for run in kills:
        print(f"SIGKILL of scoring processes under load, --workers {run['workers']}: {run['ok']} of "
              f"{run['requests']} answered 200 over {run['kills']} kills ({run['failed_batches_logged']} "
              f"batches lost to a kill, rescored); latency p50 {run['p50_s']:.2f} s, "
              f"p99 {run['p99_s']:.2f} s, slowest {run['max_s']:.2f} s")
    if shadow is not None:
        print(f"SIGTERM with {args.shadow_queue} shadow debates queued, --shutdown-timeout 10: tree gone "
              f"in {shadow['seconds']:.2f} s, {shadow['abandoned']} abandoned, "
              f"{shadow['calls_after']} upstream debate calls after the SIGTERM")


if __name__ == "__main__":
    main()
