"""CPU per upstream call of three HTTP clients under the server's concurrency (issue 20).

    python benchmarks/bench_upstream_client.py [--concurrency 32] [--calls 40] [--latency 0.2]

`imad serve` makes each request's self-critique call from a worker thread through the upstream
client's `httpx.Client`. This measures, against `benchmarks/latency_stub.py` in its own process,
what one call costs this process in CPU (user+sys per call) when `--concurrency` callers run at
once, for: threads sharing one `httpx.Client` (today's path), one event loop with
`httpx.AsyncClient` (an async upstream call), and threads sharing one urllib3 pool. It answers
whether moving the call onto the event loop, or to another client, would save server CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import urllib3

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.bench_serve import Stub  # noqa: E402

BODY = {"model": "stub", "max_tokens": 10,
        "messages": [{"role": "user", "content": "Which number is tagged #3? (critique)"}]}


def in_threads(concurrency: int, calls: int, call: Callable[[], object]) -> tuple[float, float]:
    """CPU ms per call and calls/s with `concurrency` threads making `calls` calls each."""
    def work() -> None:
        for _ in range(calls):
            call()

    threads = [threading.Thread(target=work) for _ in range(concurrency)]
    cpu, wall = time.process_time(), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    n = concurrency * calls
    return 1000 * (time.process_time() - cpu) / n, n / (time.perf_counter() - wall)


def httpx_threads(url: str, concurrency: int, calls: int) -> tuple[float, float]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with httpx.Client(limits=limits) as client:
        return in_threads(concurrency, calls, lambda: client.post(url, json=BODY).json())


def urllib3_threads(url: str, concurrency: int, calls: int) -> tuple[float, float]:
    pool = urllib3.PoolManager(maxsize=concurrency)
    headers = {"Content-Type": "application/json"}
    return in_threads(concurrency, calls, lambda: json.loads(
        pool.request("POST", url, body=json.dumps(BODY).encode(), headers=headers).data))


def httpx_async(url: str, concurrency: int, calls: int) -> tuple[float, float]:
    async def run() -> tuple[float, float]:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits) as client:
            async def work() -> None:
                for _ in range(calls):
                    (await client.post(url, json=BODY)).json()

            cpu, wall = time.process_time(), time.perf_counter()
            await asyncio.gather(*(work() for _ in range(concurrency)))
            n = concurrency * calls
            return 1000 * (time.process_time() - cpu) / n, n / (time.perf_counter() - wall)

    return asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--calls", type=int, default=40, help="calls per caller")
    parser.add_argument("--latency", type=float, default=0.2, help="the stub's seconds per call")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-upstream-") as workdir:
        stub = Stub(args.latency, Path(workdir))
        try:
            url = f"{stub.url}/v1/chat/completions"
            print(f"{args.concurrency} callers x {args.calls} calls, stub latency {args.latency:g} s")
            print("| client | CPU ms per call | calls/s |\n|---|---:|---:|")
            for _ in range(args.repeat):
                for name, client in (("httpx.Client, threads", httpx_threads),
                                     ("httpx.AsyncClient, one event loop", httpx_async),
                                     ("urllib3 pool, threads", urllib3_threads)):
                    cpu_ms, rate = client(url, args.concurrency, args.calls)
                    print(f"| {name} | {cpu_ms:.3f} | {rate:.0f} |", flush=True)
        finally:
            stub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
