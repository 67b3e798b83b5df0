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
With `--log PATH [--since T]` instead of `--corpus` it fits on a decision log's scored
decisions (issue 32): the new version's record names the log, the rows and their time range.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from imad.cli.time_flags import SINCE_FORMS
from imad.commandline.calibration import SPLIT_HINT, report, target_from_args
from imad.commandline.calibration import add_arguments as add_calibration_arguments
from imad.errors import ConfigError

__all__ = ["add_arguments", "recalibrate", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_calibration_arguments(parser)
    parser.add_argument("--log", default=None, metavar="PATH",
                        help="instead of --corpus, a decision log: --recalibrate fits on its scored "
                             "decisions (the labelled ones for platt, isotonic, temperature), "
                             "--target-trigger-rate chooses τ on its traffic's p")
    parser.add_argument("--since", default=None, metavar="T",
                        help=f"with --log: only decisions from T: {SINCE_FORMS}")


def run(args: argparse.Namespace) -> int:
    from imad.router.calibration_set import read_validation_set
    from imad.router.threshold import calibrate_router

    target = target_from_args(args)
    if args.recalibrate is not None:
        return recalibrate(args)
    read_log = answers_from_log(args, validation=True)
    if read_log is not None:
        result = calibrate_router(args.router, read_log, **target, out=args.out,
                                  overwrite=args.overwrite)
        report(result, as_json=args.json)
        return 0
    if not args.corpus:
        raise ConfigError("corpus (--corpus)", f"give the validation answers to choose τ on; {SPLIT_HINT}")
    result = calibrate_router(
        args.router, lambda router: read_validation_set(router, args.corpus), **target,
        out=args.out, overwrite=args.overwrite)
    report(result, as_json=args.json)
    return 0


def answers_from_log(args: argparse.Namespace, *, validation: bool = False):
    """`--log PATH [--since T]` as the reader `recalibrate_router` takes (`validation`: the one
    `calibrate_router` takes); None without --log."""
    if args.log is None:
        if args.since is not None:
            raise ConfigError("--since", "selects decision-log rows: give --log PATH too")
        return None
    if args.corpus:
        raise ConfigError("--log", "fit on a decision log or on --corpus files, not both")
    from imad.cli.time_flags import parse_since
    from imad.router.calibration_set import answer_scores_from_log, validation_set_from_log

    since = None if args.since is None else parse_since(args.since)
    read = validation_set_from_log if validation else answer_scores_from_log
    return lambda router: read(router, args.log, since=since)


def recalibrate(args: argparse.Namespace) -> int:
    """`--recalibrate METHOD`: fit p's calibrator on the corpus answers, write a new version."""
    from imad.commandline.entry import print_json
    from imad.router.recalibrate import recalibrate_router

    read_answers = answers_from_log(args)
    if not args.corpus and read_answers is None:
        raise ConfigError("corpus (--corpus)", "give your answers to recalibrate on (corpus JSONL, "
                                               "or a decision log with --log PATH)")
    if args.debate_tokens is not None or args.single_tokens is not None:
        raise ConfigError("recalibrate (--recalibrate)", "--debate-tokens and --single-tokens go "
                          "with --token-budget; recalibrate first, then choose τ on the new checkpoint")
    from imad.router.calibrators import DecreasingCalibratorWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DecreasingCalibratorWarning)
        result = recalibrate_router(args.router, args.corpus, args.recalibrate, out=args.out,
                                    overwrite=args.overwrite, read_answers=read_answers)
    _say_decreasing(caught, DecreasingCalibratorWarning)
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
    print(f"tau: {result.router.config.threshold.tau:.6g} (unchanged; compared with the calibrated p)")
    print(f"checkpoint: {result.checkpoint}")
    return 0


def _say_decreasing(caught: list[warnings.WarningMessage], decreasing: type[Warning]) -> None:
    """A fitted map that decreases is said once, in words, on stderr (the reload repeats it);
    any other warning is shown as Python would have."""
    said = False
    for warning in caught:
        if issubclass(warning.category, decreasing):
            if not said:
                print(f"warning: {warning.message}", file=sys.stderr)
            said = True
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)

