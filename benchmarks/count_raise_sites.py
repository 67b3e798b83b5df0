"""Count hand-written validation raise sites in a source tree (issue 24's goal).

Why: the issue asks that hand-written validation goes down as the constraints
tables take over. A site is one ``raise`` statement whose exception is a call
of ``ConfigError``, ``ValueError`` or ``TypeError`` (any module prefix), in a
``.py`` file under ``imad/`` other than ``imad/constraints.py`` (the one
checker). Re-raises (``raise``, ``raise err``) are not sites.

    python benchmarks/count_raise_sites.py [ROOT] [--rev REV]

``--rev`` reads the files of a git revision (``git show REV:path``) instead of
the working tree.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

NAMES = frozenset({"ConfigError", "ValueError", "TypeError"})
EXCLUDED = frozenset({"imad/constraints.py"})


def count_sites(source: str) -> Counter[str]:
    """Count validation raise sites in one module's source, by exception name."""
    counts: Counter[str] = Counter()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            func = node.exc.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in NAMES:
                counts[name] += 1
    return counts


def _sources(root: Path, rev: str | None) -> dict[str, str]:
    if rev is None:
        return {
            p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted((root / "imad").rglob("*.py"))
        }
    names = subprocess.run(
        ["git", "-C", str(root), "ls-tree", "-r", "--name-only", rev, "imad/"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return {
        n: subprocess.run(
            ["git", "-C", str(root), "show", f"{rev}:{n}"],
            check=True, capture_output=True, text=True,
        ).stdout
        for n in names if n.endswith(".py")
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=".")
    parser.add_argument("--rev", default=None)
    args = parser.parse_args(argv)
    total: Counter[str] = Counter()
    for name, source in _sources(Path(args.root), args.rev).items():
        if name not in EXCLUDED:
            total += count_sites(source)
    label = args.rev or "working tree"
    detail = " ".join(f"{k}={total[k]}" for k in sorted(NAMES))
    print(f"{label}: {sum(total.values())} raise sites ({detail})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
