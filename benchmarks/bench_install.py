"""How heavy is imad to install and how fast does it start? (issue 13)

    python benchmarks/bench_install.py                      # core and dev, 5 timing runs
    python benchmarks/bench_install.py --extras core --runs 3

Builds the wheel of this checkout, installs it into a fresh venv per extra (`core` = no extra,
`dev` = everything) with pip's cache as it is (warm here) and `torch==2.13.0` in the same command
(a plain `torch` pulls a multi-GB CUDA build), and reports for each: the install's wall time, the
venv's size, and, in cold processes, the median over `--runs` of the time to `import imad` and
of `Router.load()` and the first `decide()` on a recorded self-critique. The install itself is
timed once per extra (`--install-runs` to repeat): on this shared 2-core machine it takes
minutes. Prints a table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "corpus" / "smollm2-135m-instruct-q4_1" / "eval" / "medqa.jsonl"
EXTRAS = {"core": "", "dev": "[dev]"}

_FIRST_DECISION = """
import json, sys, time
start = time.perf_counter()
import imad
imported = time.perf_counter()
from imad.critique.schema import CritiqueResponse
from imad.decide import checkpoint_policy
record = json.loads(open(sys.argv[1], encoding="utf-8").readline())
router = imad.Router.load()
loaded = time.perf_counter()
response = CritiqueResponse.from_dict(record["parsed"])
checkpoint_policy(router.config).decide(router.score(record["question"]["text"], response))
decided = time.perf_counter()
print(json.dumps({"import": imported - start, "load": loaded - imported, "decide": decided - loaded}))
"""


def build_wheel(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(out), str(ROOT)], check=True)
    return next(out.glob("imad-*.whl"))


def install(venv: Path, wheel: Path, extra: str) -> float:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {**os.environ, "CMAKE_ARGS": "-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF"}  # as bin/bootstrap
    start = time.perf_counter()
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "torch==2.13.0",
                    f"{wheel}{EXTRAS[extra]}"], check=True, env=env)
    return time.perf_counter() - start


def size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def cold_runs(python: Path, runs: int, cwd: Path) -> dict[str, float]:
    samples: dict[str, list[float]] = {"process": [], "import": [], "load": [], "decide": []}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run([str(python), "-c", _FIRST_DECISION, str(RECORDED)], cwd=cwd,
                                env=env, capture_output=True, text=True, check=True)
        samples["process"].append(time.perf_counter() - start)
        for key, value in json.loads(result.stdout).items():
            samples[key].append(value)
    return {key: statistics.median(values) for key, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", nargs="+", choices=sorted(EXTRAS), default=["core", "dev"])
    parser.add_argument("--runs", type=int, default=5, help="cold processes per timing (median)")
    parser.add_argument("--install-runs", type=int, default=1, help="installs per extra (median)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench-install-") as folder:
        work = Path(folder)
        wheel = build_wheel(work / "wheel")
        print(f"wheel: {wheel.name}, {wheel.stat().st_size / 1e6:.1f} MB")
        header = (f"{'extra':<6}{'install s':>11}{'venv MB':>9}{'import imad s':>15}"
                  f"{'load s':>8}{'1st decide s':>14}{'process s':>11}")
        rows = []
        for extra in args.extras:
            seconds, venv = [], work / f"venv-{extra}"
            for attempt in range(args.install_runs):
                venv = work / f"venv-{extra}-{attempt}"
                seconds.append(install(venv, wheel, extra))
            timing = cold_runs(venv / "bin" / "python", args.runs, work)
            rows.append(f"{extra:<6}{statistics.median(seconds):>11.1f}{size_mb(venv):>9.0f}"
                        f"{timing['import']:>15.3f}{timing['load']:>8.3f}{timing['decide']:>14.3f}"
                        f"{timing['process']:>11.2f}")
        print(header, *rows, sep="\n")
        print(f"(medians of {args.runs} cold processes; install timed {args.install_runs}x; "
              f"load average after: {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
