"""Where `imad serve`'s start-up time goes, and what the port answers meanwhile.

    python benchmarks/bench_serve_startup.py [--repeats 3] [--busy 0]

Starts real `imad serve` processes (the shipped router, the loopback stub upstream of the fault
tests: tests/support/serve_process.py) `--repeats` times for each set-up — one process with 0,
1 and the default (one per core) scoring processes, and `--workers 2` — and reports the medians
of: seconds from the command's start to the first answer on the port (503 `server_starting`),
to `server_ready`, and each phase of `server_ready`'s `startup_phases` (the slowest worker's
under `--workers 2`). `--busy N` runs N CPU-bound processes meanwhile, as on a machine whose
cores are taken (a test suite, other servers), where start-up was measured at 40-77 s.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from imad.router.registry import DEFAULT_ROUTER, resolve_checkpoint  # noqa: E402
from tests.support.serve_process import ServeProcess, upstream_stub  # noqa: E402

SETUPS = {
    "1 process, 0 scoring processes": ("--scoring-processes", "0"),
    "1 process, 1 scoring process": ("--scoring-processes", "1"),
    "1 process, default scoring processes": (),
    "--workers 2, default scoring processes": ("--workers", "2"),
}
PHASES = ("imports_and_checks", "router_and_chat_model", "feature_extractor", "scoring_processes")


def one_start(flags: tuple[str, ...], workdir: Path) -> dict[str, float]:
    workers = int(flags[1]) if flags[:1] == ("--workers",) else 1
    with upstream_stub() as upstream:
        started = time.monotonic()
        server = ServeProcess(resolve_checkpoint(DEFAULT_ROUTER), upstream, workdir, *flags)
        try:
            first_answer = None
            while len(server.events("server_ready")) < workers:
                assert server.process.poll() is None, server.log.read_text()[-2000:]
                if first_answer is None:
                    try:
                        httpx.get(f"{server.url}/health", timeout=5)
                        first_answer = time.monotonic() - started
                    except httpx.TransportError:
                        pass
                time.sleep(0.02)
            ready = time.monotonic() - started
            readies = server.events("server_ready")
            slowest = max(readies, key=lambda line: line["startup_s"])
            return {"first answer": first_answer if first_answer is not None else ready,
                    "ready": ready, **{phase: slowest["startup_phases"][phase] for phase in PHASES}}
        finally:
            server.stop()


def spin() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound processes meanwhile")
    args = parser.parse_args()
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    try:
        columns = ("first answer", "ready", *PHASES)
        print(f"busy processes: {args.busy}; medians of {args.repeats} starts, seconds")
        print("| set-up | " + " | ".join(columns) + " |")
        print("|---|" + "---:|" * len(columns))
        with tempfile.TemporaryDirectory() as workdir:
            for name, flags in SETUPS.items():
                runs = [one_start(flags, Path(workdir)) for _ in range(args.repeats)]
                medians = [statistics.median(run[column] for run in runs) for column in columns]
                print(f"| {name} | " + " | ".join(f"{value:.2f}" for value in medians) + " |", flush=True)
    finally:
        for spinner in spinners:
            spinner.kill()


if __name__ == "__main__":
    main()
