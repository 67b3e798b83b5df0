"""The `imad` command: a registry of sub-commands, each in its own module.

Each sub-command module defines `add_arguments(parser)` and `run(args) -> int`. Modules are
imported only when their command runs (or for --help), so `imad --version` loads nothing heavy.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from imad import __version__
from imad.errors import ImadError

COMMANDS: dict[str, tuple[str, str]] = {
    "critique": ("imad.cli.critique", "one structured self-critique call; prints the parsed answer"),
    "features": ("imad.cli.features", "the 41 router features of a saved self-critique response"),
    "debate": ("imad.cli.debate", "run a multi-agent debate back-end on one question"),
    "ask": ("imad.cli.ask", "answer a question: self-critique, route, debate when unsure"),
    "calibrate": ("imad.cli.calibrate", "choose the router threshold for a target trigger rate"),
    "serve": ("imad.cli.serve", "an OpenAI-compatible routing server"),
}


def _available_commands() -> dict[str, tuple[str, str]]:
    """Commands whose module exists in this installation."""
    return {name: entry for name, entry in COMMANDS.items()
            if importlib.util.find_spec(entry[0]) is not None}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="imad", description="Keep a confident LLM answer; escalate the rest to a debate.")
    parser.add_argument("--version", action="version", version=f"imad {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, summary) in _available_commands().items():
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(name, help=summary, description=summary)
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except ImadError as error:
        print(f"imad {args.command}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"imad {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
