"""Flags every `python -m training.*` command shares, beside `imad.cli.entry`'s exit rule.

`--debug` is read by `imad.cli.entry.debug_requested` before parsing; it is declared here so
that argparse accepts it and `--help` lists it. `positive_int` makes `--limit 0` and
`--limit -1` usage errors (exit 2) instead of a run that answers nothing or drops the last
question (`[:-1]`).
"""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An argparse type: an integer ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer ≥ 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got {value}")
    return value


def add_debug_flag(parser: argparse.ArgumentParser) -> None:
    """`--debug`: show the traceback of an error (also IMAD_DEBUG=1)."""
    parser.add_argument("--debug", action="store_true", default=False,
                        help="show the traceback of an error (also IMAD_DEBUG=1)")
