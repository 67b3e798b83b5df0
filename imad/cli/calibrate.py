"""`imad calibrate`: choose the router threshold τ for a target trigger rate or token budget.

    imad calibrate --corpus answers.jsonl --target-trigger-rate 0.2
    imad calibrate --router imad-router-v1 --token-budget 1500 --debate-tokens 4000 --corpus val/
    imad calibrate --recalibrate platt --corpus my-labelled-answers.jsonl
    imad calibrate --recalibrate prior-shift --corpus my-traffic.jsonl    # no labels needed
    imad calibrate --certify --max-error 0.1 --log decisions.sqlite     # a τ with a promise

τ is chosen on labelled validation answers (corpus files, `imad.router.calibration_set`) and
written, with how it was chosen, into a new checkpoint version (`my-router-v1` →
`my-router-v1.1` beside it; a shipped `imad-router-v2` → `./imad-router-v2-local.1`, never a
shipped name nor the installed package; or `--out`); the original is never modified. This
runs on the core install: it imports nothing from `training`. To choose τ on the router's own
validation split (rebuilt from its training corpus), run `python -m training.calibrate`, which
takes the same flags and needs the `train` extra.

`--recalibrate METHOD` moves p instead of τ: it fits a calibrator on the router's raw scores of
your answers (`imad.router.recalibrate`) and writes it into the new version; τ follows the
checkpoint's rule (chosen again for its target trigger rate, or kept when fixed). Every new
version's escalation rate on the answers it was made on is printed, and a version that would
escalate or keep ≥ 95% of them (or a target rate tied scores cannot meet) is refused unless
`--allow-extreme-rate` (`imad.router.escalation`).
With `--log PATH [--since T]` instead of `--corpus` it fits on a decision log's scored
decisions: the new version's record names the log, the rows and their time range.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from imad.cli.time_flags import SINCE_FORMS
from imad.commandline.calibration import SPLIT_HINT, report, target_from_args
from imad.commandline.calibration import add_arguments as add_calibration_arguments
from imad.decision_log.replica import REPLICA_HELP
from imad.errors import ConfigError

__all__ = ["add_arguments", "recalibrate", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from imad.cli.certify import add_certify_arguments

    add_calibration_arguments(parser, certify=True)
    add_certify_arguments(parser)
    parser.add_argument("--log", default=None, metavar="PATH|URL",
                        help="instead of --corpus, a decision log (a SQLite file or a postgresql:// "
                             "URL): --recalibrate fits on its scored "
                             "decisions (the labelled ones for platt, isotonic, temperature), "
                             "--target-trigger-rate chooses τ on its traffic's p")
    parser.add_argument("--since", default=None, metavar="T",
                        help=f"with --log: only decisions from T: {SINCE_FORMS}")
    parser.add_argument("--replica", default=None, metavar="HOST[:PID]",
                        help=f"with --log: {REPLICA_HELP}")


def run(args: argparse.Namespace) -> int:
    from imad.cli.certify import certify_command, reject_certify_flags
    from imad.router.calibration_set import read_validation_set
    from imad.router.threshold import calibrate_router

    if args.certify:
        return certify_command(args)
    reject_certify_flags(args)
    target = target_from_args(args)
    if args.recalibrate is not None:
        return recalibrate(args)
    read_log = answers_from_log(args, validation=True)
    if read_log is not None:
        result = calibrate_router(args.router, read_log, **target, out=args.out,
                                  overwrite=args.overwrite, allow_extreme=args.allow_extreme_rate)
        report(result, as_json=args.json)
        return 0
    if not args.corpus:
        raise ConfigError("corpus (--corpus)", f"give the validation answers to choose τ on; {SPLIT_HINT}")
    result = calibrate_router(
        args.router, lambda router: read_validation_set(router, args.corpus), **target,
        out=args.out, overwrite=args.overwrite, allow_extreme=args.allow_extreme_rate)
    report(result, as_json=args.json)
    return 0


def answers_from_log(args: argparse.Namespace, *, validation: bool = False):
    """`--log PATH [--since T] [--replica R]` as the reader `recalibrate_router` takes
    (`validation`: the one `calibrate_router` takes); None without --log."""
    from imad.cli.decision_log_flags import log_selection

    selection = log_selection(args)
    if selection is None:
        return None
    from imad.router.calibration_set import answer_scores_from_log, validation_set_from_log

    since, replica = selection
    read = validation_set_from_log if validation else answer_scores_from_log
    return lambda router: read(router, args.log, since=since, replica=replica)


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
                                    overwrite=args.overwrite, read_answers=read_answers,
                                    allow_extreme=args.allow_extreme_rate)
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
    escalation = record["escalation"]
    before, after = escalation["before"], escalation["after"]
    print(f"tau: {after['tau']:.6g} ({escalation['tau_rule']}; compared with the calibrated p)")
    print(f"escalation rate on the {after['questions']} {after['traffic']}: {after['rate']:.4f} "
          f"({after['escalated']} escalated at tau {after['tau']:.6g}); before: {before['rate']:.4f} "
          f"at tau {before['tau']:.6g}")
    if escalation["tau_rule"].startswith("kept"):
        print("to choose tau for a trigger rate instead: imad calibrate --target-trigger-rate R "
              f"--router {result.checkpoint} (with the same --log or --corpus)")
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

