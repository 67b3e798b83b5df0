"""`python -m training.calibrate`: choose τ on the router's own validation split.

    python -m training.calibrate --router checkpoints/imad-router-v1 --target-trigger-rate 0.2

The same command as `imad calibrate` (same flags, same search: `imad.router.threshold`), with
one more source of validation answers: without `--corpus` it rebuilds the router's validation
split from the training corpus recorded in its checkpoint (`training.evaluation.training_rows`),
which needs the training code. With `--corpus` it reads the files through the corpus loader and
its feature cache.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from imad.commandline.calibration import add_arguments, report, target_from_args
from imad.commandline.entry import EXIT_STATUS_HELP, debug_requested, run_entry_point
from imad.corpus_records import read_records
from imad.router import Router
from imad.router.threshold import CalibrationResult, ValidationSet, calibrate_router
from training.datamodule import corpus_files, load_corpus
from training.evaluation.training_rows import recorded_corpus, router_training_rows


def validation_set(router: Router, corpus: Sequence[str], feature_cache: str | None) -> ValidationSet:
    """The router's scores on `corpus`, or on its own validation split when `corpus` is empty."""
    records = [r for file in corpus_files(list(corpus) or recorded_corpus(router))
               for r in read_records(file)]
    tokens = float(np.mean([r.tokens for r in records])) if records else None
    if corpus:
        table = load_corpus(list(corpus), feature_cache=feature_cache,
                            schema_version=router.feature_schema_version)
        unparsed = int(table.summary["parse_failures"])
        source = {"kind": "corpus files", "files": [str(c) for c in corpus],
                  "labelled": int(table.labels.size), "unparsed": unparsed}
        return ValidationSet(router.predict_proba(table.features), table.labels, unparsed, source, tokens)
    rows = router_training_rows(router, feature_cache=feature_cache)
    source = {"kind": "the router's validation split", **rows.provenance}
    return ValidationSet(router.predict_proba(rows.validation_features), rows.validation_labels, 0,
                         source, tokens)


def calibrate(args: argparse.Namespace) -> CalibrationResult:
    return calibrate_router(
        args.router, lambda router: validation_set(router, args.corpus, args.feature_cache),
        **target_from_args(args), out=args.out, overwrite=args.overwrite,
        allow_extreme=args.allow_extreme_rate)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m training.calibrate", description=__doc__.split("\n")[0],
                                     epilog=EXIT_STATUS_HELP)
    add_arguments(parser, corpus_required=False)
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    parser.add_argument("--feature-cache", default="runs/feature-cache",
                        help="feature-matrix cache directory (default: %(default)s)")
    parser.add_argument("--no-feature-cache", dest="feature_cache", action="store_const",
                        const=None, help="always re-extract features")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    report(calibrate(args), as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(run_entry_point("python -m training.calibrate", lambda: main(sys.argv[1:]),
                             debug=debug_requested()))
