"""Benchmark: `imad log export` of a large decision log, JSON lines and Parquet, under a memory cap.

    python benchmarks/bench_log_export.py                         # 900,000 rows, 1 GiB cap
    python benchmarks/bench_log_export.py --rows 100000 --limit-mib 0   # no cap

Builds a log of `--rows` decisions (the rows of bench_decision_log.py: 41 features as JSON, 3
reasons, tokens by phase; a tenth labelled) by inserting encoded rows straight into SQLite, one
transaction (a DecisionLog would take minutes for 900,000), then runs `imad log export` for each
format in a child process whose address space is capped at `--limit-mib` (RLIMIT_AS, as
`ulimit -v` does). Per format it prints the exit status, rows/s of wall time, the child's peak
resident memory (ru_maxrss) and the output's size. The Parquet export streams row groups, so
its peak is that of one batch, whatever the log's length.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_decision_log import make_rows

from imad.decision_log import DecisionLog
from imad.decision_log.columns import ID, LOG_COLUMNS, TIME
from imad.decision_log.encode import encode_row

DISTINCT_ROWS = 1_000
"""Distinct row bodies the log cycles through (each row still gets its own id and time)."""
START = 1_780_000_000.0

CHILD = """
import resource, sys, time
limit = int(sys.argv[1])
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from imad.cli.main import main
started = time.perf_counter()
status = main(sys.argv[2:])
wall = time.perf_counter() - started
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"RESULT {status} {wall:.3f} {peak_kib}", file=sys.stderr)
sys.exit(status)
"""


def build_log(path: Path, rows: int) -> None:
    """A log of `rows` decisions, a tenth of them labelled, written in one transaction."""
    DecisionLog(path).close()  # the schema, as imad creates it
    bodies = [encode_row({**row, TIME: START}, LOG_COLUMNS, log_text=False)
              for row in make_rows(DISTINCT_ROWS)]
    id_at = [column.name for column in LOG_COLUMNS].index(ID)
    time_at = [column.name for column in LOG_COLUMNS].index(TIME)
    names = ", ".join(column.name for column in LOG_COLUMNS)
    marks = ", ".join("?" for _ in LOG_COLUMNS)

    def encoded():
        for index, body in zip(range(rows), itertools.cycle(bodies)):
            row = list(body)
            row[id_at] = f"chatcmpl-{index:09d}"
            row[time_at] = START + index * 0.5
            yield row

    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("BEGIN")
        connection.executemany(f"INSERT INTO decisions ({names}) VALUES ({marks})", encoded())
        connection.executemany(
            "INSERT INTO labels (id, correct, source, time, changes) VALUES (?, ?, 'gold', ?, 0)",
            ((f"chatcmpl-{index:09d}", index % 3 != 0, START + rows) for index in range(0, rows, 10)))
        connection.execute("COMMIT")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


def export(log: Path, fmt: str, out: Path, limit_bytes: int) -> tuple[int, float, float, str]:
    """(exit status, wall s, peak RSS MiB, the last stderr line) of one capped export."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(limit_bytes), "log", "export", "--log", str(log),
         "--format", fmt, "--out", str(out)], capture_output=True, text=True, env=env, check=False)
    lines = done.stderr.strip().splitlines()
    result = next((line for line in reversed(lines) if line.startswith("RESULT ")), None)
    if result is None:
        return done.returncode, float("nan"), float("nan"), (lines or ["(no output)"])[-1]
    _, status, wall, peak_kib = result.split()
    said = next((line for line in lines if not line.startswith("RESULT ")), "")
    return int(status), float(wall), int(peak_kib) / 1024, said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=900_000)
    parser.add_argument("--limit-mib", type=int, default=1024,
                        help="address-space cap of the exporting process, MiB (0: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "log.db"
        started = time.perf_counter()
        build_log(log, args.rows)
        print(f"log: {args.rows:,} rows, {log.stat().st_size / 2**20:,.0f} MiB, built in "
              f"{time.perf_counter() - started:.1f} s; load average {os.getloadavg()}")
        cap = f"{args.limit_mib} MiB address space" if args.limit_mib else "no cap"
        for fmt in ("jsonl", "parquet"):
            out = Path(folder) / f"out.{fmt}"
            status, wall, peak_mib, said = export(log, fmt, out, args.limit_mib * 2**20)
            size = out.stat().st_size / 2**20 if out.exists() else 0.0
            print(f"{fmt:8s} ({cap}): exit {status}, {wall:.1f} s, {args.rows / wall:,.0f} rows/s, "
                  f"peak RSS {peak_mib:,.0f} MiB, output {size:,.0f} MiB  [{said}]")
            out.unlink(missing_ok=True)
    print(f"load average at end {os.getloadavg()}; benchmark process peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")


if __name__ == "__main__":
    main()
