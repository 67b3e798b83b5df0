"""What shadow debates cost a request's latency (issue 32): p50 with `--shadow-debate-rate 0.2`
against without.

    python benchmarks/bench_shadow.py [--latency 0.2] [--clients 8] [--requests 400] [--repeat 2]

The same set-up as bench_serve.py (whose processes and load it reuses): the real `imad serve`
in front of `benchmarks/latency_stub.py` (every call answered after `--latency` s), model name
`imad-acemad-0`, one scoring process. Three servers per repeat, started in turn and interleaved
across repeats so a drift of the shared machine's load hits all alike: plain (no shadow),
`--shadow` (rate 0) and `--shadow --shadow-debate-rate 0.2`. Per row: p50/p99 latency,
requests/s, upstream calls per request, and for the sampled server the shadow debates submitted,
run, dropped (the bounded queue was full) and failed, from `/v1/imad/stats` after the row. Every
answer is checked as bench_serve.py checks it (a wrong or lost answer: exit 1). The goal: the
sampled server's p50 within 5% of the shadow server's without debates.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.bench_serve import Server, Stub, run_row  # noqa: E402

CONFIGS = {"plain": [], "shadow": ["--shadow"],
           "shadow+0.2": ["--shadow", "--shadow-debate-rate", "0.2"]}
GOAL = 0.05


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="upstream seconds per call")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    p50s: dict[str, list[float]] = {name: [] for name in CONFIGS}
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        stub = Stub(args.latency, workdir)
        print("| repeat | server | p50 ms | p99 ms | req/s | calls/req | shadow debates "
              "(submitted / run / dropped / failed) |")
        print("|---|---|---|---|---|---|---|")
        try:
            for repeat in range(args.repeat):
                for name, flags in CONFIGS.items():
                    server = Server(stub.url, ["--scoring-processes", "1", *flags], workdir)
                    try:
                        server.wait_ready(1)
                        row = run_row(server, stub, args.clients, "kept", args.requests,
                                      first=1 + repeat * 10 * args.requests)
                        shadow = httpx.get(f"{server.url}/v1/imad/stats", timeout=10).json()
                    finally:
                        server.stop()
                    debates = shadow.get("shadow_debates")
                    counts = "—" if not debates else (f"{debates['submitted']} / {debates['run']} / "
                                                      f"{debates['dropped']} / {debates['failed']}")
                    print(f"| {repeat + 1} | {name} | {row.percentile_ms(0.5):.1f} | "
                          f"{row.percentile_ms(0.99):.1f} | {row.rate:.1f} | "
                          f"{row.calls_per_request:.2f} | {counts} |", flush=True)
                    failed |= bool(row.failures)
                    for failure in row.failures[:5]:
                        print(f"  FAILED: {failure}")
                    p50s[name].append(row.percentile_ms(0.5))
        finally:
            stub.stop()
    base, sampled = statistics.median(p50s["shadow"]), statistics.median(p50s["shadow+0.2"])
    change = sampled / base - 1
    print(f"\nmedian p50: plain {statistics.median(p50s['plain']):.1f} ms, shadow {base:.1f} ms, "
          f"shadow + rate 0.2 {sampled:.1f} ms ({change:+.1%}; goal within {GOAL:.0%}: "
          f"{'met' if abs(change) <= GOAL else 'NOT met'})")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
