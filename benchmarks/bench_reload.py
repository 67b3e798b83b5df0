"""How long a hot reload of the router takes (issue 32, item 6).

    python benchmarks/bench_reload.py [--repeats 3] [--workers 2]

Starts a real `imad serve --scoring-processes 1` on loopback in front of the loopback stub
upstream of the fault tests (tests/support/serve_process.py) with the shipped imad-router-v2,
then reloads alternately imad-router-v1 and imad-router-v2 `--repeats` times each, idle, and
measures for each reload: from sending `POST /v1/imad/admin/reload` to its 200 (load, validation,
the swap; with `--workers N` also the other workers' load and their answers, which the 200
waits for), and until /health of every worker names the new router's hash (polled every 20 ms
on new connections, so any worker may answer).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from imad.decision_log.answer_row import router_identity  # noqa: E402
from imad.router import Router  # noqa: E402
from imad.router.registry import shipped_directory  # noqa: E402
from tests.support.serve_process import ServeProcess, upstream_stub  # noqa: E402

ROUTERS = ("imad-router-v1", "imad-router-v2")


def every_worker_serves(server: ServeProcess, workers: int, want: str) -> None:
    seen: dict[int, str] = {}
    while not (len(seen) == workers and set(seen.values()) == {want}):
        health = server.health()
        seen[health["worker_pid"]] = health["router"]["hash"]
        time.sleep(0.02)


def measure(workers: int, repeats: int, workdir: Path) -> list[tuple[float, float]]:
    """(seconds to the 200, seconds until every worker serves it) of each reload."""
    hashes = {name: router_identity(Router.load(name)).hash for name in ROUTERS}
    times = []
    with upstream_stub() as upstream:
        server = ServeProcess(shipped_directory() / ROUTERS[1], upstream, workdir,
                              "--workers", str(workers), "--scoring-processes", "1")
        try:
            server.wait_ready(workers)
            every_worker_serves(server, workers, hashes[ROUTERS[1]])
            for index in range(2 * repeats):
                name = ROUTERS[index % 2]
                clock = time.perf_counter()
                response = httpx.post(f"{server.url}/v1/imad/admin/reload", json={"router": name},
                                      timeout=300)
                answered = time.perf_counter() - clock
                assert response.status_code == 200, response.text
                every_worker_serves(server, workers, hashes[name])
                times.append((answered, time.perf_counter() - clock))
        finally:
            server.stop()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        times = measure(args.workers, args.repeats, Path(workdir))
    answered = [round(first, 2) for first, _ in times]
    everywhere = [round(last, 2) for _, last in times]
    print(f"--workers {args.workers}: POST → 200: {answered} s (median {statistics.median(answered):.2f})")
    print(f"--workers {args.workers}: POST → every worker serving the new hash: {everywhere} s "
          f"(median {statistics.median(everywhere):.2f})")


if __name__ == "__main__":
    main()
