"""The `imad` command: a registry of sub-commands, each in its own module.

Each sub-command module defines `add_arguments(parser)` and `run(args) -> int`. Modules are
imported only when their command runs (or for --help), so `imad --version` loads nothing heavy.
Every command runs under the entry-point rule of `imad.commandline.entry`: a typed error prints
`imad COMMAND: error: …` without a traceback and exits 2 (usage) or 3 (failed run, including a
run that produced no answer); `--debug` (before or after the command) or `IMAD_DEBUG=1` shows
the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from imad import __version__
from imad.commandline.entry import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    EXIT_USAGE,
    debug_requested,
    finish_output,
    run_entry_point,
    watch_stdout,
)

DEBUG_HELP = "show the traceback of an error instead of one 'error: …' line (also IMAD_DEBUG=1)"

COMMANDS: dict[str, tuple[str, str]] = {
    "critique": ("imad.cli.critique", "one structured self-critique call; prints the parsed answer"),
    "features": ("imad.cli.features", "the 41 router features of a saved self-critique response"),
    "debate": ("imad.cli.debate", "run a multi-agent debate back-end on one question"),
    "ask": ("imad.cli.ask", "answer a question: self-critique, route, debate when unsure"),
    "calibrate": ("imad.cli.calibrate", "choose the router threshold for a target trigger rate"),
    "serve": ("imad.cli.serve", "an OpenAI-compatible routing server"),
    "log": ("imad.cli.log", "export a decision log, or import outcome labels into it"),
    "report": ("imad.cli.report", "the report card of a decision log: is the gate worth it?"),
}


def _available_commands() -> dict[str, tuple[str, str]]:
    """Commands whose module exists in this installation."""
    return {name: entry for name, entry in COMMANDS.items()
            if importlib.util.find_spec(entry[0]) is not None}


class CommandParser(argparse.ArgumentParser):
    """argparse's parser, but a switch given a value (`--metrics-public=yes`) is refused with a
    message that says the switch takes none (argparse's own reads "ignored explicit argument")."""

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        for arg in sys.argv[1:] if args is None else args:
            if arg == "--":
                break
            option, equals, _ = arg.partition("=")
            action = self._option_string_actions.get(option) if equals else None
            if action is not None and action.nargs == 0:
                self.error(f"{option} is a switch and takes no value: write {option} alone "
                           f"(or leave it out), not {arg}")
        return super().parse_known_args(args, namespace)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="imad", description="Keep a confident LLM answer; escalate the rest to a debate.",
        epilog=EXIT_STATUS_HELP)
    parser.add_argument("--version", action="version", version=f"imad {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    for name, (module_name, summary) in _available_commands().items():
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(name, help=summary, description=summary, epilog=EXIT_STATUS_HELP)
        module.add_arguments(sub)
        # SUPPRESS: `imad --debug ask …` is not undone by the sub-command's own default
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
        sub.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `imad` with `argv` (default: the process's) and return its exit status."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    debug = debug_requested(arguments)
    parser = build_parser()
    with watch_stdout() as watched:
        try:
            args = parser.parse_args(arguments)
        except SystemExit:  # --help, --version or a usage error, printed: exits as argparse says
            refused = finish_output("imad", EXIT_OK, watched)  # unless stdout refused the text
            if refused != EXIT_OK:
                return refused
            raise
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    return run_entry_point(f"imad {args.command}", lambda: args._run(args), debug=debug)


if __name__ == "__main__":
    sys.exit(main())
