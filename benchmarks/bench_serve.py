"""Load benchmark of `imad serve` in front of a model server with a fixed latency (issue 20).

    python benchmarks/bench_serve.py [--latency 0.2] [--clients 1,8,32,64] [--mix kept,escalated]
                                     [--workers 1] [--max-concurrency N] [--requests N] [--repeat 1]
                                     [--scoring-processes N]

The upstream is `benchmarks/latency_stub.py`, an OpenAI-compatible server on 127.0.0.1 in its own
process that answers every call after `--latency` seconds. The routing server is the real CLI,
`python -m imad.cli.main serve --llm openai:stub@…` with the shipped router, started as a
subprocess once per client count with `--max-concurrency` equal to the clients (the defaults for
one client) and nothing else unless asked (`--workers`, `--scoring-processes`). Two mixes: `kept`
sends only `imad-acemad-0` (τ = 0: one upstream call, never a debate); `escalated` sends every
fifth request as `imad-svrmad-1` (τ = 1: always an SVR-MAD debate with the back-end's defaults,
six agents that agree in round one).

Per row: requests/s, p50/p99 latency, CPU ms per request of the server process and its children
(psutil, user+sys before/after the row), upstream calls per request (counted by the stub), the
bound min(clients / (latency × calls per request), cores / CPU per request) and the ratio to it.
Before the rows, the batched feature cost per answer is measured in this process on the very
self-critique text the stub returns (`featurize.extract_batch`, as bench_features.py does), so
the goal "CPU per kept request ≤ 2× batched features" is checked within one run.

Every answer is checked against its question's tag and its request id: a lost, crossed, duplicated
or non-200 response fails the script (exit 1). After each row /metrics is scraped and parsed with
prometheus_client's parser; the change of the outcome counter (`imad_decisions_total`) must equal
the requests sent in the row. The load average is printed before and after each row: the machine
may be shared.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.latency_stub import critique_for  # noqa: E402

KEPT_MODEL = "imad-acemad-0"
ESCALATED_MODEL = "imad-svrmad-1"
ESCALATE_EVERY = 5
MIXES = ("kept", "escalated")
GOAL_RATE, GOAL_RATIO, GOAL_OVERHEAD_MS, GOAL_CPU_FACTOR = 128.0, 0.8, 25.0, 2.0


def question(index: int) -> str:
    return f"Which number is tagged #{index}?"


def model_for(mix: str, index: int) -> str:
    return ESCALATED_MODEL if mix == "escalated" and index % ESCALATE_EVERY == 0 else KEPT_MODEL


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def load_average() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


# --- the batched feature cost on the stub's own text ---------------------------------------------

def batched_feature_ms(n: int = 256, batch_size: int = 64) -> tuple[float, float]:
    """CPU and wall ms per answer of `featurize.extract_batch` over `n` of the stub's answers
    (best of two), with the shipped router's schema version."""
    from imad.critique.schema import CritiqueResponse
    from imad.router import Router, featurize

    version = Router.load().feature_schema_version
    questions = [question(index) for index in range(n)]
    responses = []
    for index in range(n):
        fields = critique_for(str(index))
        fields.update(confidence_initial=fields["confidence_initial"] / 100,
                      confidence_critique=fields["confidence_critique"] / 100)
        responses.append(CritiqueResponse(**fields))
    featurize.extract_batch(questions[:8], responses[:8], version, batch_size=8)  # loads spaCy
    best_cpu = best_wall = float("inf")
    for _ in range(2):
        cpu, wall = time.process_time(), time.perf_counter()
        featurize.extract_batch(questions, responses, version, batch_size=batch_size)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return 1000 * best_cpu / n, 1000 * best_wall / n


# --- processes -----------------------------------------------------------------------------------

class Stub:
    """benchmarks/latency_stub.py in its own process."""

    def __init__(self, latency_s: float, workdir: Path) -> None:
        port_file = workdir / "stub.port"
        self.process = subprocess.Popen(
            [sys.executable, str(REPO_ROOT / "benchmarks" / "latency_stub.py"),
             "--latency", str(latency_s), "--port-file", str(port_file)])
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the latency stub did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{int(port_file.read_text())}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


class Server:
    """`python -m imad.cli.main serve` as a subprocess, with the CPU time of it and its children."""

    def __init__(self, upstream_url: str, flags: list[str], workdir: Path) -> None:
        self.port = free_port()
        self.log = workdir / f"serve-{self.port}.log"
        self.command = [sys.executable, "-m", "imad.cli.main", "serve", "--port", str(self.port),
                        "--llm", f"openai:stub@{upstream_url}/v1?max_retries=0", *flags]
        path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            env={**os.environ, "PYTHONPATH": path})
        self.url = f"http://127.0.0.1:{self.port}"
        self.psutil = psutil.Process(self.process.pid)

    def wait_ready(self, workers: int) -> None:
        import httpx

        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"imad serve exited:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200 and (
                        workers == 1 or self.log.read_text().count('"server_ready"') >= workers):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"imad serve did not become ready:\n{self.log.read_text()[-3000:]}")

    def cpu_s(self) -> float:
        total = 0.0
        for process in (self.psutil, *self.psutil.children(recursive=True)):
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# --- load ----------------------------------------------------------------------------------------

@dataclass
class Row:
    clients: int
    mix: str
    n: int
    wall_s: float = 0.0
    cpu_s: float = 0.0
    calls: int = 0
    latencies_s: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    outcomes: float = 0.0
    load_before: str = ""
    load_after: str = ""
    server_ms: float = float("nan")
    upstream_ms: float = float("nan")
    batch_size: float = float("nan")

    def percentile_ms(self, q: float) -> float:
        ordered = sorted(self.latencies_s)
        if not ordered:
            return float("nan")
        return 1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    @property
    def rate(self) -> float:
        return len(self.latencies_s) / self.wall_s

    @property
    def cpu_ms(self) -> float:
        return 1000 * self.cpu_s / self.n

    @property
    def calls_per_request(self) -> float:
        return self.calls / self.n

    def bound(self, latency_s: float, cores: int) -> float:
        return min(self.clients / (latency_s * self.calls_per_request), cores / (self.cpu_s / self.n))


async def send(url: str, clients: int, mix: str, first: int, n: int, row: Row | None) -> None:
    """`n` requests (indices first…first+n-1), `clients` at a time; each answer checked."""
    import aiohttp

    indices = iter(range(first, first + n))
    seen: set[str] = set()
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(url, connector=connector, timeout=timeout) as session:

        async def client() -> None:
            for index in indices:
                body = {"model": model_for(mix, index),
                        "messages": [{"role": "user", "content": question(index)}]}
                started = time.perf_counter()
                async with session.post("/v1/chat/completions", json=body) as response:
                    payload = await response.json(content_type=None)
                    request_id = response.headers.get("X-Request-Id")
                elapsed = time.perf_counter() - started
                if row is None:
                    continue
                if response.status != 200:
                    row.failures.append(f"#{index}: HTTP {response.status} {payload}")
                    continue
                answer = payload["choices"][0]["message"]["content"]
                if answer != str(index) or request_id != payload["id"] or payload["id"] in seen:
                    row.failures.append(f"#{index}: answer {answer!r}, id {payload['id']}, "
                                        f"header id {request_id}")
                    continue
                seen.add(payload["id"])
                row.latencies_s.append(elapsed)

        await asyncio.gather(*(client() for _ in range(clients)))


SCRAPED = ("imad_decisions_total", "imad_request_duration_seconds_sum",
           "imad_request_duration_seconds_count", "imad_upstream_request_duration_seconds_sum",
           "imad_upstream_request_duration_seconds_count", "imad_score_batch_size_sum",
           "imad_score_batch_size_count")


def scrape(url: str) -> dict[str, float]:
    """The samples in SCRAPED summed over their labels, read with prometheus_client's parser."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{url}/metrics", timeout=10).text
    totals = dict.fromkeys(SCRAPED, 0.0)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in totals:
                totals[sample.name] += sample.value
    return totals


def growth_mean(before: dict[str, float], after: dict[str, float], name: str) -> float:
    """The mean of histogram `name` over the samples observed between two scrapes."""
    count = after[f"{name}_count"] - before[f"{name}_count"]
    return (after[f"{name}_sum"] - before[f"{name}_sum"]) / count if count else float("nan")


def stub_calls(stub: Stub) -> int:
    import httpx

    return httpx.get(f"{stub.url}/count", timeout=10).json()["calls"]


def run_row(server: Server, stub: Stub, clients: int, mix: str, n: int, first: int) -> Row:
    row = Row(clients, mix, n)
    asyncio.run(send(server.url, clients, mix, first, clients, None))  # warm the connections
    scraped, calls = scrape(server.url), stub_calls(stub)
    row.load_before = load_average()
    cpu, clock = server.cpu_s(), time.perf_counter()
    asyncio.run(send(server.url, clients, mix, first + clients, n, row))
    row.wall_s, row.cpu_s = time.perf_counter() - clock, server.cpu_s() - cpu
    row.load_after = load_average()
    row.calls = stub_calls(stub) - calls
    after = scrape(server.url)
    row.outcomes = after["imad_decisions_total"] - scraped["imad_decisions_total"]
    row.server_ms = 1000 * growth_mean(scraped, after, "imad_request_duration_seconds")
    row.upstream_ms = 1000 * growth_mean(scraped, after, "imad_upstream_request_duration_seconds")
    row.batch_size = growth_mean(scraped, after, "imad_score_batch_size")
    if len(row.latencies_s) != n:
        row.failures.append(f"{n - len(row.latencies_s)} of {n} requests not answered correctly")
    if row.outcomes != n:
        row.failures.append(f"imad_decisions_total grew by {row.outcomes:g}, {n} requests sent")
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="upstream seconds per call")
    parser.add_argument("--clients", default="1,8,32,64", help="client counts (default: %(default)s)")
    parser.add_argument("--mix", default=",".join(MIXES), help="kept, escalated or both")
    parser.add_argument("--workers", type=int, default=1, help="the server's --workers")
    parser.add_argument("--scoring-processes", default=None,
                        help="the server's --scoring-processes (default: the server's default; "
                             "0 scores in a thread of the server process)")
    parser.add_argument("--max-concurrency", type=int, default=None,
                        help="the server's --max-concurrency (default: the clients; defaults for 1)")
    parser.add_argument("--requests", type=int, default=None,
                        help="requests per row (default: max(40, 16 x clients))")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each row")
    args = parser.parse_args()
    clients_list = [int(text) for text in args.clients.split(",")]
    mixes = [text.strip() for text in args.mix.split(",")]
    if any(mix not in MIXES for mix in mixes):
        parser.error(f"--mix: choose from {', '.join(MIXES)}")
    cores = os.cpu_count() or 1

    feature_cpu_ms, feature_wall_ms = batched_feature_ms()
    print(f"machine: {cores} CPUs; upstream latency {args.latency:g} s; workers {args.workers}; "
          f"batched features on the stub's answers: {feature_cpu_ms:.2f} ms CPU per answer "
          f"({feature_wall_ms:.2f} ms wall)")
    print("| clients | mix | server flags | requests | req/s | p50 ms | p99 ms | server CPU ms/req "
          "| upstream calls/req | bound req/s | ratio | outcomes = requests | load avg before → after |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    breakdowns: list[str] = []
    rows: list[tuple[Row, str]] = []
    failed = False
    first = 0
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as workdir:
        stub = Stub(args.latency, Path(workdir))
        try:
            for clients in clients_list:
                slots = args.max_concurrency or (clients if clients > 1 else None)
                flags = ([] if slots is None else ["--max-concurrency", str(slots)])
                flags += [] if args.workers == 1 else ["--workers", str(args.workers)]
                flags += ([] if args.scoring_processes is None
                          else ["--scoring-processes", args.scoring_processes])
                server = Server(stub.url, flags, Path(workdir))
                try:
                    server.wait_ready(args.workers)
                    for mix in mixes:
                        for _ in range(args.repeat):
                            n = args.requests or max(40, 16 * clients)
                            row = run_row(server, stub, clients, mix, n, first)
                            first += n + clients
                            rows.append((row, " ".join(flags) or "defaults"))
                            bound = row.bound(args.latency, cores)
                            print(f"| {clients} | {mix} | {' '.join(flags) or 'defaults'} | {n} | "
                                  f"{row.rate:.1f} | {row.percentile_ms(0.5):.1f} | "
                                  f"{row.percentile_ms(0.99):.1f} | {row.cpu_ms:.1f} | "
                                  f"{row.calls_per_request:.2f} | {bound:.1f} | "
                                  f"{row.rate / bound:.2f} | {row.outcomes:g} = {n} "
                                  f"{'ok' if row.outcomes == n else 'MISMATCH'} | "
                                  f"{row.load_before} → {row.load_after} |", flush=True)
                            own_ms = (f"{row.server_ms - row.upstream_ms:.1f}" if mix == "kept"
                                      else "—")
                            breakdowns.append(
                                f"| {clients} | {mix} | {1000 * row.wall_s / n * clients:.1f} | "
                                f"{row.server_ms:.1f} | {row.upstream_ms:.1f} | {own_ms} | "
                                f"{row.batch_size:.1f} |")
                            for failure in row.failures[:5]:
                                print(f"  FAILED: {failure}")
                            failed |= bool(row.failures)
                finally:
                    server.stop()
        finally:
            stub.stop()

    print("\nwhere the latency goes (means from the server's histograms; the rest of the "
          "client's mean is the client and the loopback; a debate's calls overlap, so the "
          "server's own time is shown for the kept mix only):")
    print("| clients | mix | client mean ms | server mean ms | upstream call mean ms "
          "| server minus its upstream call ms | answers per score batch |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    print("\n".join(breakdowns))
    print("goals (issue 20):")
    for row, flags in rows:
        if row.mix != "kept":
            continue
        if row.clients == 32 and args.workers == 1:
            ratio = row.rate / row.bound(args.latency, cores)
            met = row.rate >= GOAL_RATE and ratio >= GOAL_RATIO
            print(f"  32 clients ({flags}): {row.rate:.1f} req/s (goal ≥ {GOAL_RATE:g}), "
                  f"{ratio:.2f} of the bound (goal ≥ {GOAL_RATIO}): {'met' if met else 'MISSED'}")
        if row.clients == 1:
            overhead = row.percentile_ms(0.5) - 1000 * args.latency
            print(f"  1 client: p50 overhead {overhead:.1f} ms over {args.latency:g} s (goal ≤ "
                  f"{GOAL_OVERHEAD_MS:g} ms): {'met' if overhead <= GOAL_OVERHEAD_MS else 'MISSED'}")
        if row.clients >= 8:
            factor = row.cpu_ms / feature_cpu_ms
            print(f"  CPU per kept request, {row.clients} clients: {row.cpu_ms:.1f} ms = "
                  f"{factor:.2f}x batched features (goal ≤ {GOAL_CPU_FACTOR:g}x): "
                  f"{'met' if factor <= GOAL_CPU_FACTOR else 'MISSED'}")
    print("checks: every request answered once with its own answer, outcome counters add up"
          if not failed else "checks FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
