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
  the replacement warms up).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tree-") as folder:
        workdir = Path(folder)
        router_dir = make_router(seed=11).save(workdir / "router")
        print(f"load average at start {os.getloadavg()}")
        vanish = [vanish_s(router_dir, workdir) for _ in range(args.repeats)]
        recover = [recover_s(router_dir, workdir) for _ in range(args.repeats)]
        print(f"load average at end {os.getloadavg()}")
    print("SIGKILL of the --workers 2 supervisor → tree gone, port free: "
          + ", ".join(f"{value:.2f}" for value in vanish) + f" s (median {statistics.median(vanish):.2f})")
    print("SIGSTOP of the scoring process → a new request answered 200: "
          + ", ".join(f"{total:.2f} s (that request {last:.2f} s)" for total, last in recover))


if __name__ == "__main__":
    main()
