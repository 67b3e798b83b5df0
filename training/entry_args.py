"""Flags every `python -m training.*` command shares, beside `imad.commandline.entry`'s exit rule.

`--debug` is read by `imad.commandline.entry.debug_requested` before parsing; it is declared here so
that argparse accepts it and `--help` lists it. The commands' values are checked by their
config's constraints table (`--limit 0` or `--limit -1` is a usage error, exit 2, never a run
that answers nothing or drops the last question).
"""

from __future__ import annotations

import argparse


def add_debug_flag(parser: argparse.ArgumentParser) -> None:
    """`--debug`: show the traceback of an error (also IMAD_DEBUG=1)."""
    parser.add_argument("--debug", action="store_true", default=False,
                        help="show the traceback of an error (also IMAD_DEBUG=1)")
