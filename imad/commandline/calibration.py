"""The calibration flags and report that `imad calibrate` and `python -m training.calibrate` share.

Both commands take the same target flags (`--target-trigger-rate`, `--token-budget`, …), read
each by its `CalibrationTarget` row, and print the same report; only where the validation answers
come from differs (corpus files, or the router's own validation split in `training`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from imad.commandline.entry import print_json
from imad.router.calibrators import RECALIBRATION_METHODS, UNLABELLED_METHODS

if TYPE_CHECKING:
    from imad.router.threshold import CalibrationResult

SPLIT_HINT = ("to calibrate on the router's own validation split run `python -m training.calibrate` "
              "with the same flags (needs: pip install 'imad[train]')")


def add_arguments(parser: argparse.ArgumentParser, *, corpus_required: bool = True,
                  certify: bool = False) -> None:
    parser.add_argument("--router", default=None,
                        help="shipped router name or checkpoint directory (default: imad-router-v2)")
    target = parser.add_mutually_exclusive_group(required=True)
    if certify:
        target.add_argument("--certify", action="store_true",
                            help="certify τ for a largest error among kept answers (--max-error) "
                                 "on labelled answers, with confidence (--confidence)")
    target.add_argument("--recalibrate", metavar="METHOD", nargs="?", const="auto",
                        choices=RECALIBRATION_METHODS,
                        help=f"fit p's calibrator instead of τ on your answers: "
                             f"{', '.join(RECALIBRATION_METHODS)} (auto, the default with no "
                             "METHOD: the labels' base rate unless Platt or isotonic beats it "
                             f"beyond chance; {', '.join(UNLABELLED_METHODS)} needs no labels)")
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
                        help="new checkpoint directory (default: the next version beside the "
                             "source, my-router-v1 → my-router-v1.1; for a shipped router "
                             "./imad-router-v2-local.1 in the current directory)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    parser.add_argument("--allow-extreme-rate", action="store_true",
                        help="write the new version even when it would escalate, or keep, at least "
                             "95%% of the answers it was made on, or when tied scores miss the "
                             "target trigger rate (refused by default: label more, certify, or "
                             "keep the old router)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def target_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The target flags' texts, each read by its `CalibrationTarget` row (ASCII digits, finite,
    in range; `ConfigError` naming the flag), as `calibrate_router`'s keyword arguments."""
    from imad.constraints import parse_text
    from imad.router.threshold import TARGET_ROWS, target_flag

    return {name: None if getattr(args, name) is None
            else parse_text(getattr(args, name), row, target_flag(name))
            for name, row in TARGET_ROWS.items()}


def report(result: CalibrationResult, *, as_json: bool) -> None:
    """Print what was chosen: a few lines of text, or the whole record as JSON."""
    from imad.router.threshold import answers_in_words

    if as_json:
        print_json({"checkpoint": str(result.checkpoint), "tau": result.choice.tau, **result.record})
        return
    choice = result.choice
    print(f"tau: {choice.tau:.6g} (was {result.record['parent']['tau']:.6g})")
    answers = answers_in_words(result.record["validation"])
    print(f"trigger rate on {choice.questions} {answers}: {choice.achieved_rate:.4f} "
          f"(target {choice.target_rate:.4f}; {choice.escalated} escalated, {choice.unparsed} unparsed)")
    if choice.kept_accuracy is not None:
        print(f"accuracy of the kept answers: {choice.kept_accuracy:.4f}")
    print(f"checkpoint: {result.checkpoint}")
