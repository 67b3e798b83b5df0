"""What shadow debates cost a request's latency (issue 32): p50 with `--shadow-debate-rate 0.2`
against without.

    python benchmarks/bench_shadow.py [--latency 0.2] [--clients 8] [--requests 120] [--rounds 20]
                                      [--repeat 1] [--seed 0] [--resamples 10000]

The same set-up as bench_serve.py (whose processes and load it reuses): the real `imad serve`
in front of `benchmarks/latency_stub.py` (every call answered after `--latency` s), model name
`imad-acemad-0`, one scoring process. Three servers: plain (no shadow), `--shadow` (rate 0) and
`--shadow --shadow-debate-rate 0.2`.

The method is a paired A/B test, because on a shared machine the load of other processes drifts
by more than the effect sought. The three servers are started once per `--repeat` and kept warm
(idle between their rows) for `--rounds` short rounds: a server's start-up (spaCy, the router, the
scoring process) would otherwise cost more than a round and a fresh process's first requests are
slow. Each round sends `--requests` requests to each server in a seeded random order, so neither
server is always the first after an idle pause, and the rows of a round lie seconds apart, under
nearly the same outside load. After the sampled server's row the script waits until its shadow
queue is empty, so no debate of that row runs during another server's row (a round's last
debates therefore run on no measured request: a slight underestimate, one debate's time in a
round of several seconds). The estimate is the median over rounds of the paired ratio
p50(shadow+0.2) / p50(shadow), with a percentile-bootstrap 95% interval (rounds resampled with
replacement, numpy, seeded); the goal (within 5%) is shown when the interval lies inside
[0.95, 1.05] and refuted when it lies above 1.05. Per round: each server's p50, the ratios, the
sampled server's shadow debates and the load average. Per server, the CPU ms per request (psutil,
the server and its scoring process), which prices a debate's CPU. Every answer is checked as
bench_serve.py checks it (a wrong or lost answer: exit 1); no time is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.bench_serve import Row, Server, Stub, load_average, run_row  # noqa: E402

CONFIGS = {"plain": [], "shadow": ["--shadow"],
           "shadow+0.2": ["--shadow", "--shadow-debate-rate", "0.2"]}
BASE, SAMPLED = "shadow", "shadow+0.2"
GOAL = 0.05
DRAIN_TIMEOUT_S = 120.0


def shadow_counts(server: Server) -> dict[str, int] | None:
    """The server's shadow debate counters from /v1/imad/stats (None without shadow debates)."""
    return httpx.get(f"{server.url}/v1/imad/stats", timeout=10).json().get("shadow_debates")


def drain(server: Server) -> float:
    """Wait until every shadow debate the server took has finished; the seconds waited."""
    started = time.perf_counter()
    while True:
        counts = shadow_counts(server)
        if counts is None or counts["submitted"] == counts["run"] + counts["dropped"] + counts["failed"]:
            return time.perf_counter() - started
        if time.perf_counter() - started > DRAIN_TIMEOUT_S:
            raise SystemExit(f"the shadow queue did not drain in {DRAIN_TIMEOUT_S:g} s: {counts}")
        time.sleep(0.05)


def bootstrap_median(values: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    """The percentile-bootstrap 95% interval of the median of `values`."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    medians = np.median(values[picks], axis=1)
    low, high = np.percentile(medians, [2.5, 97.5])
    return float(low), float(high)


def verdict(low: float, high: float) -> str:
    if low >= 1 - GOAL and high <= 1 + GOAL:
        return f"the goal (within {GOAL:.0%}) is shown: the whole interval lies inside ±{GOAL:.0%}"
    if low > 1 + GOAL:
        return f"the goal is refuted: the whole interval lies above +{GOAL:.0%}"
    return f"not decided: the interval reaches past ±{GOAL:.0%} (more rounds narrow it)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="upstream seconds per call")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=120, help="requests per server per round")
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds per repeat")
    parser.add_argument("--repeat", type=int, default=1,
                        help="fresh sets of the three servers, each measured for --rounds rounds")
    parser.add_argument("--seed", type=int, default=0, help="the order of rounds and the bootstrap")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    args = parser.parse_args()
    for flag, value in (("--requests", args.requests), ("--rounds", args.rounds),
                        ("--repeat", args.repeat), ("--clients", args.clients),
                        ("--resamples", args.resamples)):
        if value < 1:
            parser.error(f"{flag} must be at least 1, got {value}")
    rng = np.random.default_rng(args.seed)
    rounds: list[dict[str, Row]] = []
    debates: dict[str, int] = {"submitted": 0, "run": 0, "dropped": 0, "failed": 0}
    failed = False
    first = 0
    print(f"load average at start: {load_average()}")
    print("| round | order | plain p50 ms | shadow p50 ms | shadow+0.2 p50 ms | shadow+0.2 / shadow "
          "| shadow / plain | debates run / dropped | drain s | load avg |")
    print("|---:|---|---:|---:|---:|---:|---:|---|---:|---|")
    with tempfile.TemporaryDirectory(prefix="bench-shadow-") as tmp:
        workdir = Path(tmp)
        stub = Stub(args.latency, workdir)
        try:
            for _ in range(args.repeat):
                servers = {name: Server(stub.url, ["--scoring-processes", "1", *flags], workdir)
                           for name, flags in CONFIGS.items()}
                try:
                    for server in servers.values():
                        server.wait_ready(1)
                    for server in servers.values():  # a warm-up row each, not counted
                        run_row(server, stub, args.clients, "kept", 2 * args.clients, first)
                        first += 3 * args.clients
                        drain(server)
                    before = shadow_counts(servers[SAMPLED]) or debates
                    for _ in range(args.rounds):
                        order = [str(name) for name in rng.permutation(list(CONFIGS))]
                        rows: dict[str, Row] = {}
                        waited = 0.0
                        counts = shadow_counts(servers[SAMPLED]) or debates
                        for name in order:
                            rows[name] = run_row(servers[name], stub, args.clients, "kept",
                                                 args.requests, first)
                            first += args.requests + args.clients
                            if name == SAMPLED:
                                waited = drain(servers[name])
                        after = shadow_counts(servers[SAMPLED]) or debates
                        rounds.append(rows)
                        p50 = {name: row.percentile_ms(0.5) for name, row in rows.items()}
                        print(f"| {len(rounds)} | {' → '.join(order)} | {p50['plain']:.1f} | "
                              f"{p50[BASE]:.1f} | {p50[SAMPLED]:.1f} | {p50[SAMPLED] / p50[BASE]:.3f} | "
                              f"{p50[BASE] / p50['plain']:.3f} | {after['run'] - counts['run']} / "
                              f"{after['dropped'] - counts['dropped']} | {waited:.1f} | "
                              f"{load_average()} |", flush=True)
                        for row in rows.values():
                            failed |= bool(row.failures)
                            for failure in row.failures[:5]:
                                print(f"  FAILED: {failure}")
                    last = shadow_counts(servers[SAMPLED]) or debates
                    for event in debates:
                        debates[event] += last[event] - before[event]
                finally:
                    for server in servers.values():
                        server.stop()
        finally:
            stub.stop()
    print(f"\nload average at end: {load_average()}")
    ratio = np.array([rows[SAMPLED].percentile_ms(0.5) / rows[BASE].percentile_ms(0.5)
                      for rows in rounds])
    cost = np.array([rows[BASE].percentile_ms(0.5) / rows["plain"].percentile_ms(0.5)
                     for rows in rounds])
    print("per server over all rounds: | server | median p50 ms | CPU ms/request | calls/request |")
    for name in CONFIGS:
        measured = [rows[name] for rows in rounds]
        cpu_ms = 1000 * sum(row.cpu_s for row in measured) / sum(row.n for row in measured)
        calls = sum(row.calls for row in measured) / sum(row.n for row in measured)
        print(f"  | {name} | {statistics.median(row.percentile_ms(0.5) for row in measured):.1f} | "
              f"{cpu_ms:.1f} | {calls:.2f} |")
    print(f"shadow debates of the measured rounds: submitted {debates['submitted']}, run "
          f"{debates['run']}, dropped {debates['dropped']}, failed {debates['failed']}")
    extra_cpu_s = sum(rows[SAMPLED].cpu_s - rows[BASE].cpu_s for rows in rounds)
    if debates["run"]:
        print(f"server CPU per shadow debate (sampled minus shadow server, over the debates run): "
              f"{1000 * extra_cpu_s / debates['run']:.1f} ms")
    low, high = bootstrap_median(ratio, args.resamples, args.seed)
    print(f"shadow+0.2 / shadow, paired p50 ratio over {len(ratio)} rounds: median "
          f"{np.median(ratio):.3f} ({np.median(ratio) - 1:+.1%}), bootstrap 95% interval "
          f"[{low:.3f}, {high:.3f}] ({low - 1:+.1%} … {high - 1:+.1%}); {verdict(low, high)}")
    low, high = bootstrap_median(cost, args.resamples, args.seed)
    print(f"shadow / plain (shadow mode itself, no debates): median {np.median(cost):.3f}, "
          f"bootstrap 95% interval [{low:.3f}, {high:.3f}]")
    print("checks: every request answered once with its own answer, outcome counters add up"
          if not failed else "checks FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
