"""Benchmark: the decision log's two stores, SQLite (one machine) and PostgreSQL (the fleet).

    python benchmarks/bench_decision_log_stores.py                # 16,000 rows, 1/4/16 writers
    python benchmarks/bench_decision_log_stores.py --url postgresql://…   # an existing server

For each store and each count of concurrent writers (1, 4, 16 processes, as replicas or
workers are: each its own `DecisionLog`, writing `--rows / N` rows of the server's columns —
41 features as JSON, 3 reasons, tokens by phase, no text — in one burst after a common start):

- rows/s: all rows over the wall time from the start until every writer has closed (all rows
  committed),
- record µs: CPU µs per row on the calling thread (`time.thread_time` around `record()`): what
  a request pays, the queueing only,
- writer µs: CPU µs per row of the writing processes (`time.process_time`, the writer thread's
  encoding and the driver included),
- server µs: CPU µs per row of the PostgreSQL server's processes (psutil: the live ones and
  the backends that exited; 0 for SQLite, which runs inside the writer),
- written and dropped rows (every row must be written).

Without `--url` a throwaway PostgreSQL cluster is started in a temporary folder
(`tests/support/postgres.py`, as the tests do). Best of `--repeats` runs (the machine is shared).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_decision_log import make_rows  # noqa: E402
from imad.decision_log import DecisionLog  # noqa: E402


def writer(target: str, rows: list[dict], ready, start, results) -> None:
    """One writing process: open the log, say so, wait for the common start, record, close,
    report."""
    log = DecisionLog(target, queue_size=len(rows) + 1)
    ready.put(os.getpid())
    start.wait()
    process = time.process_time()
    thread = time.thread_time()
    for row in rows:
        log.record(row)
    record_cpu = time.thread_time() - thread
    log.close()
    results.put((record_cpu, time.process_time() - process, log.stats["written"],
                 sum(log.stats.group("dropped").values())))


def server_cpu(postmaster: int | None) -> float:
    """CPU seconds so far of the PostgreSQL server's processes (0 without one)."""
    if postmaster is None:
        return 0.0
    import psutil

    root = psutil.Process(postmaster)
    own = root.cpu_times()  # with the backends that have exited (their time is the postmaster's
    total = own.user + own.system + own.children_user + own.children_system  # children's now)
    for process in root.children(recursive=True):
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:  # exited meanwhile: counted in the postmaster's children
            pass
    return total


def run_once(target: str, writers: int, total_rows: int, postmaster: int | None, seed: int) -> dict:
    context = multiprocessing.get_context("spawn")
    ready, start, results = context.Queue(), context.Event(), context.Queue()
    per = total_rows // writers
    processes = [context.Process(target=writer, args=(target, make_rows(per, seed=seed * 100 + i),
                                                      ready, start, results))
                 for i in range(writers)]
    for process in processes:
        process.start()
    for _ in processes:  # every writer has imported imad and opened its log
        ready.get()
    served = server_cpu(postmaster)
    wall = time.perf_counter()
    start.set()
    reports = [results.get() for _ in processes]
    wall = time.perf_counter() - wall
    served = server_cpu(postmaster) - served
    for process in processes:
        process.join()
    rows = per * writers
    return {"rows_s": rows / wall, "record_us": sum(r[0] for r in reports) / rows * 1e6,
            "writer_us": sum(r[1] for r in reports) / rows * 1e6, "server_us": served / rows * 1e6,
            "written": sum(r[2] for r in reports), "dropped": sum(r[3] for r in reports)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16_000)
    parser.add_argument("--writers", default="1,4,16")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--url", default=None, help="an existing PostgreSQL server's database URL")
    args = parser.parse_args()
    counts = [int(value) for value in args.writers.split(",")]
    print(f"{args.rows} rows per run, writers {counts}, best of {args.repeats}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'store':<11} {'writers':>7} {'rows/s':>8} {'record µs':>10} {'writer µs':>10} "
          f"{'server µs':>10} {'written':>8} {'dropped':>8}")
    if args.url is None:
        from tests.support.postgres import running_postgres

        cluster = running_postgres()
    else:
        cluster = nullcontext(None)
    with cluster as server, tempfile.TemporaryDirectory(prefix="bench-stores-") as folder:
        postmaster = None
        if server is not None:
            postmaster = int((server.folder / "data" / "postmaster.pid").read_text().split()[0])
        run = 0
        for store in ("sqlite", "postgresql"):
            for writers in counts:
                best = None
                for _ in range(args.repeats):
                    run += 1
                    if store == "sqlite":
                        target = str(Path(folder) / f"log-{run}.db")
                    elif server is not None:
                        target = server.url(server.fresh_database())
                    else:
                        target = args.url
                    result = run_once(target, writers, args.rows, postmaster if store != "sqlite"
                                      else None, seed=run)
                    if best is None or result["rows_s"] > best["rows_s"]:
                        best = result
                print(f"{store:<11} {writers:>7} {best['rows_s']:>8.0f} {best['record_us']:>10.1f} "
                      f"{best['writer_us']:>10.1f} {best['server_us']:>10.1f} "
                      f"{best['written']:>8} {best['dropped']:>8}", flush=True)
    print(f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
