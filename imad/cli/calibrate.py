"""`imad calibrate`: choose the router threshold τ for a target trigger rate or token budget.

    imad calibrate --corpus answers.jsonl --target-trigger-rate 0.2
    imad calibrate --router imad-router-v1 --token-budget 1500 --debate-tokens 4000 --corpus val/
    imad calibrate --recalibrate platt --corpus my-labelled-answers.jsonl
    imad calibrate --recalibrate prior-shift --corpus my-traffic.jsonl    # no labels needed

τ is chosen on labelled validation answers (corpus files, `imad.router.calibration_set`) and
written, with how it was chosen, into a new checkpoint version (`imad-router-v1` →
`imad-router-v1.1`, or `--out`); the original is never modified. This runs on the core install:
it imports nothing from `training`. To choose τ on the router's own validation split (rebuilt
from its training corpus), run `python -m training.calibrate`, which takes the same flags and
needs the `train` extra.

`--recalibrate METHOD` moves p instead of τ: it fits a calibrator on the router's raw scores of
your answers (`imad.router.recalibrate`) and writes it into the new version; τ stays as it was.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from imad.errors import ConfigError
from imad.routing_options import RECALIBRATION_METHODS

if TYPE_CHECKING:
    from imad.router.threshold import CalibrationResult

SPLIT_HINT = ("to calibrate on the router's own validation split run `python -m training.calibrate` "
              "with the same flags (needs: pip install 'imad[train]')")


def add_arguments(parser: argparse.ArgumentParser, *, corpus_required: bool = True) -> None:
    parser.add_argument("--router", default=None,
                        help="shipped router name or checkpoint directory (default: imad-router-v2)")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--recalibrate", metavar="METHOD", choices=RECALIBRATION_METHODS,
                        help="fit p's calibrator instead of τ: platt, isotonic or temperature on "
                             "labelled answers, prior-shift on unlabelled ones")
    target.add_argument("--target-trigger-rate", dest="target_rate", metavar="R",
                        help="share of questions to escalate to a debate, in (0, 1)")
    target.add_argument("--token-budget", metavar="B",
                        help="expected tokens per question (needs --debate-tokens)")
    parser.add_argument("--debate-tokens", default=None, metavar="D",
                        help="extra tokens one debate costs (with --token-budget)")
    parser.add_argument("--single-tokens", default=None, metavar="S",
                        help="tokens of one self-critique call (default: the corpus mean)")
    corpus_help = "labelled validation answers: corpus files or folders of *.jsonl"
    parser.add_argument("--corpus", nargs="+", default=[], metavar="PATH",
                        help=corpus_help + ("" if corpus_required else
                                            " (default: the router's validation split)"))
    parser.add_argument("--out", default=None,
                        help="new checkpoint directory (default: the next version, e.g. -v1.1)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def target_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The target flags' texts, each read by its `CalibrationTarget` row (ASCII digits, finite,
    in range; `ConfigError` naming the flag), as `calibrate_router`'s keyword arguments."""
    from imad.constraints import parse_text
    from imad.router.threshold import TARGET_ROWS, target_flag

    return {name: None if getattr(args, name) is None
            else parse_text(getattr(args, name), row, target_flag(name))
            for name, row in TARGET_ROWS.items()}


def run(args: argparse.Namespace) -> int:
    from imad.router.calibration_set import read_validation_set
    from imad.router.threshold import calibrate_router

    target = target_from_args(args)
    if args.recalibrate is not None:
        return recalibrate(args)
    if not args.corpus:
        raise ConfigError("corpus (--corpus)", f"give the validation answers to choose τ on; {SPLIT_HINT}")
    result = calibrate_router(
        args.router, lambda router: read_validation_set(router, args.corpus), **target,
        out=args.out, overwrite=args.overwrite)
    report(result, as_json=args.json)
    return 0


def recalibrate(args: argparse.Namespace) -> int:
    """`--recalibrate METHOD`: fit p's calibrator on the corpus answers, write a new version."""
    from imad.cli.common import print_json
    from imad.router.recalibrate import recalibrate_router

    if not args.corpus:
        raise ConfigError("corpus (--corpus)", "give your answers to recalibrate on (corpus JSONL)")
    if args.debate_tokens is not None or args.single_tokens is not None:
        raise ConfigError("recalibrate (--recalibrate)", "--debate-tokens and --single-tokens go "
                          "with --token-budget; recalibrate first, then choose τ on the new checkpoint")
    result = recalibrate_router(args.router, args.corpus, args.recalibrate, out=args.out,
                                overwrite=args.overwrite)
    record = result.record
    if args.json:
        print_json({"checkpoint": str(result.checkpoint), "calibrator": result.calibrator.to_dict(),
                    **record})
        return 0
    print(f"calibrator: {record['described']}")
    truth = ("" if record["true_accuracy"] is None
             else f"; accuracy of the {record['labelled']} labelled answers {record['true_accuracy']:.4f}")
    fitted = record["answers"] if record["method"] == "prior_shift" else record["labelled"]
    print(f"mean p on the {fitted} fitted answers: {record['mean_p_before']:.4f} before, "
          f"{record['mean_p_after']:.4f} after{truth}")
    if record["estimated_accuracy"] is not None:
        beside = ("no labels to compare" if record["true_accuracy"] is None else
                  f"true accuracy of the {record['labelled']} labelled answers "
                  f"{record['true_accuracy']:.4f}")
        print(f"estimated accuracy (prior shift, no labels): {record['estimated_accuracy']:.4f}; "
              f"{beside}")
    print(f"tau: {result.router.tau:.6g} (unchanged; compared with the calibrated p)")
    print(f"checkpoint: {result.checkpoint}")
    return 0


def report(result: CalibrationResult, *, as_json: bool) -> None:
    """Print what was chosen: a few lines of text, or the whole record as JSON."""
    from imad.cli.common import print_json

    if as_json:
        print_json({"checkpoint": str(result.checkpoint), "tau": result.choice.tau, **result.record})
        return
    choice = result.choice
    print(f"tau: {choice.tau:.6g} (was {result.record['parent']['tau']:.6g})")
    print(f"trigger rate on {choice.questions} validation answers: {choice.achieved_rate:.4f} "
          f"(target {choice.target_rate:.4f}; {choice.escalated} escalated, {choice.unparsed} unparsed)")
    if choice.kept_accuracy is not None:
        print(f"accuracy of the kept answers: {choice.kept_accuracy:.4f}")
    print(f"checkpoint: {result.checkpoint}")
