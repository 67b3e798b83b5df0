"""`imad calibrate`: choose the router threshold τ for a target trigger rate or token budget.

    imad calibrate --router checkpoints/imad-router-v1 --target-trigger-rate 0.2
    imad calibrate --token-budget 1500 --debate-tokens 4000 --corpus corpus/my-model/val.jsonl

τ is chosen on a validation corpus (default: the router's own validation split) and written,
with how it was chosen, into a new checkpoint version (`imad-router-v1` → `imad-router-v1.1`,
or `--out`); the original is never modified. The work is done by `training.calibrate`: this
offline command reads corpus files and needs the `train` extra (`pip install 'imad[train]'`),
unlike the run-time commands, which never import `training`.
"""

from __future__ import annotations

import argparse

from imad.errors import MissingDependencyError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--router", default=None,
                        help="checkpoint directory (default: the shipped imad-router-v1)")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--target-trigger-rate", type=float, metavar="R",
                        help="share of questions to escalate to a debate, in (0, 1)")
    target.add_argument("--token-budget", type=float, metavar="B",
                        help="expected tokens per question (needs --debate-tokens)")
    parser.add_argument("--debate-tokens", type=float, default=None, metavar="D",
                        help="extra tokens one debate costs (with --token-budget)")
    parser.add_argument("--single-tokens", type=float, default=None, metavar="S",
                        help="tokens of one self-critique call (default: the corpus mean)")
    parser.add_argument("--corpus", nargs="+", default=[], metavar="PATH",
                        help="validation corpus files or folders (default: the router's "
                             "validation split of its training corpus)")
    parser.add_argument("--out", default=None,
                        help="new checkpoint directory (default: the next version, e.g. -v1.1)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    parser.add_argument("--feature-cache", default="runs/feature-cache",
                        help="feature-matrix cache directory (default: %(default)s)")
    parser.add_argument("--no-feature-cache", dest="feature_cache", action="store_const",
                        const=None, help="always re-extract features")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def run(args: argparse.Namespace) -> int:
    try:
        from training.calibrate import calibrate_router
    except ImportError as error:
        raise MissingDependencyError(error.name or "lightning", "pip install 'imad[train]'",
                                     "imad calibrate") from error
    from imad.cli.common import print_json

    result = calibrate_router(
        args.router, target_rate=args.target_trigger_rate, token_budget=args.token_budget,
        debate_tokens=args.debate_tokens, single_tokens=args.single_tokens, corpus=args.corpus,
        out=args.out, feature_cache=args.feature_cache, overwrite=args.overwrite)
    if args.json:
        print_json({"checkpoint": str(result.checkpoint), "tau": result.choice.tau,
                    **result.record})
        return 0
    choice = result.choice
    print(f"tau: {choice.tau:.6g} (was {result.record['parent']['tau']:.6g})")
    print(f"trigger rate on {choice.questions} validation answers: {choice.achieved_rate:.4f} "
          f"(target {choice.target_rate:.4f}; {choice.escalated} escalated, {choice.unparsed} unparsed)")
    if choice.kept_accuracy is not None:
        print(f"accuracy of the kept answers: {choice.kept_accuracy:.4f}")
    print(f"checkpoint: {result.checkpoint}")
    return 0
