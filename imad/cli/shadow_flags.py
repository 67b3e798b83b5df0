"""The shadow-mode flags that `imad serve` and `imad ask` share.

    --shadow                     decide every answer, record would_escalate, serve the single answer
    --shadow-debate-rate R       a seeded share R in [0, 1] also gets its debate, after the answer
    --shadow-seed N              the seed of that share (default 0: the same requests every run)

`imad serve` reads them into its `ServeSettings` (whose table checks them); `imad ask` reads them
with `shadow_from_args`, by the same rules.
"""

from __future__ import annotations

import argparse

from imad.constraints import Integer, Real, parse_text
from imad.errors import ConfigError
from imad.shadow import MAX_SHADOW_SEED, RATE_FLAG, SEED_FLAG, SHADOW_ONLY

RATE = Real(0.0, 1.0)
SEED = Integer(0, MAX_SHADOW_SEED)


def add_shadow_arguments(parser: argparse.ArgumentParser, *, serving: bool) -> None:
    after = "after the response is sent, in a bounded background queue" if serving else \
        "after the answer is printed, before exit"
    parser.add_argument("--shadow", action="store_true",
                        help="observe only: decide as usual and record would_escalate, but serve the "
                             "single answer and run no debate")
    parser.add_argument(RATE_FLAG, default=None, metavar="R",
                        help=f"with --shadow, a seeded share R in [0, 1] of requests (would-escalate "
                             f"and would-keep alike) also gets its debate, {after}; its answer and "
                             "tokens go to the decision log (default: 0)")
    parser.add_argument(SEED_FLAG, default=None, metavar="N",
                        help="the seed that picks the shadow-debated requests (default: 0)")


def shadow_from_args(args: argparse.Namespace) -> tuple[bool, float, int]:
    """(shadow, rate, seed) from the flags, checked: a rate in [0, 1], a seed in [0, 2**32),
    neither without --shadow (ConfigError naming the flag)."""
    rate = 0.0 if args.shadow_debate_rate is None else parse_text(args.shadow_debate_rate, RATE, RATE_FLAG)
    seed = 0 if args.shadow_seed is None else parse_text(args.shadow_seed, SEED, SEED_FLAG)
    if not args.shadow:  # given at all, even as its default, without --shadow: refused
        for flag, given in ((RATE_FLAG, args.shadow_debate_rate), (SEED_FLAG, args.shadow_seed)):
            if given is not None:
                raise ConfigError(flag, SHADOW_ONLY)
    return args.shadow, rate, seed
