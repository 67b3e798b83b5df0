"""Execute the notebooks top to bottom with nbclient, in place or into another folder.

    .venv/bin/python notebooks/execute.py                  # rewrite notebooks/*.ipynb, executed
    .venv/bin/python notebooks/execute.py --out /tmp/nb    # leave the committed ones alone

The kernel is "python3", which jupyter_client starts with the interpreter running this script
(so `.venv/bin/python` gives the venv's kernel); the working directory is the repository root.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent
REPO_ROOT = NOTEBOOKS.parent
NAMES = ("calibration_report.ipynb", "ablations.ipynb")
CELL_TIMEOUT_S = 600


def execute(path: Path, out: Path) -> float:
    """Run every cell of `path`, write the executed notebook to `out`; return the seconds taken."""
    import nbformat
    from nbclient import NotebookClient

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    notebook = nbformat.read(path, as_version=4)
    started = time.perf_counter()
    NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(REPO_ROOT)}}).execute()
    seconds = time.perf_counter() - started
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, out)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for the executed copies")
    parser.add_argument("names", nargs="*", default=list(NAMES))
    args = parser.parse_args()
    for name in args.names:
        target = (args.out or NOTEBOOKS) / name
        print(f"{name}: {execute(NOTEBOOKS / name, target):.0f} s → {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
