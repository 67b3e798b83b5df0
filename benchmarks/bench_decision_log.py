"""Benchmark: what the decision log costs a request (issue 32, goal ≤ 0.5 ms of CPU per request).

    python benchmarks/bench_decision_log.py                 # 20,000 rows, NORMAL and FULL
    python benchmarks/bench_decision_log.py --rows 50000 --max-rows 10000

Writes `--rows` decision rows (a tenth of them for the paced runs) as a server would (the
interim log columns, the 41 features as a JSON object, 3 reasons, tokens by phase, no text)
through `DecisionLog` into a fresh file on the temporary folder's disk, per `synchronous` mode
in three paces: one burst (the writer takes up to 512 rows per transaction), and waiting for
the writer after every row or every 16 rows (one transaction per request, as at a low request
rate, or per 16). Per row it prints:

- record: CPU µs on the calling thread (what a request pays; `time.thread_time`),
- total: CPU µs of the whole process from the first record to `close()` (the writer thread's
  encoding, SQLite and the disk's syscalls included; `time.process_time`): the cost per request
  against the 0.5 ms goal,
- wall: µs of wall time per row from the first record to `close()` (the writer keeps up when
  this is near the record cost times the request rate),
- the file's size per row and the writer's counters (every row written, none dropped).

Each mode runs `--repeats` times; the best run is printed (the machine is shared). Then the
report card's wall time (`imad.report.report_card`, 1,000 bootstrap resamples) on a log of
`--report-rows` rows of which a fifth are labelled.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

from imad.decision_log import DecisionLog
from imad.decision_log.labels import Label, _upsert
from imad.decision_log.location import open_for_reading
from imad.report import report_card

FEATURES = [f"feature_{index:02d}" for index in range(41)]


def make_rows(count: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        p = rng.random()
        rows.append({
            "response_id": f"chatcmpl-{seed}-{index:08d}", "served_model": "gpt-x",
            "router_name": "imad-router-v2",
            "router_version": "2", "router_hash": "ab" * 32, "calibrator": "identity",
            "policy_rule": "fixed", "tau": 0.6, "tau_source": "checkpoint", "raw": p, "p": p,
            "uncertainty": rng.random(), "ood_score": rng.random() * 20, "ood": False,
            "outcome": "kept" if p >= 0.6 else "below_tau", "escalated": p < 0.6,
            "would_escalate": None,
            "reasons": [f"p {p:.2f} vs τ 0.60", "familiar answer", "parsed"],
            "features": {name: rng.random() * 10 for name in FEATURES},
            "critique_prompt_tokens": 420, "critique_completion_tokens": 83,
            "debate_prompt_tokens": 0, "debate_completion_tokens": 0,
            "question_sha256": f"{index:064x}", "single_answer": "B", "served": "single_agent",
            "shadow_debate": False, "confidence_initial": rng.random(),
        })
    return rows


def run_once(rows: list[dict], folder: Path, synchronous: str, max_rows: int | None,
             every: int | None) -> dict:
    """`every`: wait for the writer after each `every` rows (one transaction per `every` rows, as
    at a low request rate); None: one burst (transactions of up to `batch_size` rows)."""
    path = folder / f"log-{synchronous}-{time.monotonic_ns()}.db"
    log = DecisionLog(path, synchronous=synchronous, max_rows=max_rows, queue_size=len(rows) + 1)
    wall = time.perf_counter()
    process = time.process_time()
    record_cpu = 0.0
    for start in range(0, len(rows), every or len(rows)):
        thread = time.thread_time()
        for row in rows[start:start + (every or len(rows))]:
            log.record(row)
        record_cpu += time.thread_time() - thread
        if every:
            log.flush()
    log.close()
    total_cpu = time.process_time() - process
    wall = time.perf_counter() - wall
    size = sum(os.path.getsize(p) for p in folder.glob(path.name + "*"))
    return {"record_us": record_cpu / len(rows) * 1e6, "total_us": total_cpu / len(rows) * 1e6,
            "wall_us": wall / len(rows) * 1e6, "bytes": size / len(rows), "stats": log.stats}


def time_report(folder: Path, count: int) -> tuple[float, dict]:
    """Seconds `report_card` takes on a log of `count` rows, a fifth of them labelled."""
    path = folder / "report.db"
    rows = make_rows(count, seed=99)
    with DecisionLog(path, queue_size=count + 1) as log:
        for index, row in enumerate(rows):
            log.record({**row, "time": 1_796_000_000.0 + index * 30.0})
    rng = random.Random(1)
    store = open_for_reading(path, writable=True)
    with store.transaction() as connection:
        _upsert(connection, [Label(row["response_id"], rng.random() < row["p"]) for row in rows[::5]], 0.0)
    store.close()
    start = time.perf_counter()
    card = report_card(path)
    return time.perf_counter() - start, card


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--max-rows", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--report-rows", type=int, default=100_000)
    args = parser.parse_args()
    print(f"{args.rows} rows per run, max_rows {args.max_rows}, best of {args.repeats}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'synchronous':<12} {'rows/txn':>8} {'record µs':>10} {'total µs':>9} {'wall µs':>8} "
          f"{'bytes/row':>10}  written dropped pruned")
    with tempfile.TemporaryDirectory(prefix="bench-decision-log-") as folder:
        for synchronous, every in (("NORMAL", None), ("FULL", None), ("NORMAL", 1), ("FULL", 1),
                                   ("NORMAL", 16), ("FULL", 16)):
            runs = []
            count = args.rows if every is None else args.rows // 10
            for repeat in range(args.repeats):
                rows = make_rows(count, seed=repeat)
                runs.append(run_once(rows, Path(folder), synchronous, args.max_rows, every))
            best = min(runs, key=lambda run: run["total_us"])
            stats = best["stats"]
            dropped = sum(stats.group("dropped").values())
            shown = "≤512" if every is None else str(every)
            print(f"{synchronous:<12} {shown:>8} {best['record_us']:>10.1f} {best['total_us']:>9.1f} "
                  f"{best['wall_us']:>8.1f} {best['bytes']:>10.0f}  {stats['written']:>7} "
                  f"{dropped:>7} {stats['pruned']:>6}")
        seconds, card = time_report(Path(folder), args.report_rows)
        print(f"report card of {card['rows']} rows ({card['labelled']} labelled, "
              f"{len(card['windows'])} daily windows): {seconds:.2f} s wall")
    print(f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
