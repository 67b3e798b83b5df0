"""`imad calibrate --certify`: a threshold with a promise on the error of the answers it keeps.

    imad calibrate --certify --max-error 0.1 --log decisions.sqlite
    imad calibrate --certify --max-error 0.1 --confidence 0.99 --max-trigger-rate 0.4 --corpus labelled/

Prints the certificate (exit 0) and writes a new router version whose τ is the certified one,
the certificate in its record and model card; or prints why no τ can be certified and exits 3
with one `error:` line naming the reason (`imad.decide.certify`).
"""

from __future__ import annotations

import argparse

from imad.constraints import Real, parse_text
from imad.errors import ConfigError, NotCertifiableError

__all__ = ["add_certify_arguments", "certify_command", "reject_certify_flags"]

OPEN_UNIT = Real(0.0, 1.0, closed="neither")
FLAGS = {"max_error": "--max-error", "confidence": "--confidence",
         "max_trigger_rate": "--max-trigger-rate"}


def add_certify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-error", default=None, metavar="A",
                        help="with --certify: the largest acceptable error among kept answers, in (0, 1)")
    parser.add_argument("--confidence", default=None, metavar="C",
                        help="with --certify: the confidence of the promise, in (0, 1) (default 0.95)")
    parser.add_argument("--max-trigger-rate", default=None, metavar="B",
                        help="with --certify: the largest acceptable share of escalated answers")


def reject_certify_flags(args: argparse.Namespace) -> None:
    """The certify flags mean nothing without --certify: say so instead of ignoring them."""
    given = [flag for name, flag in FLAGS.items() if getattr(args, name, None) is not None]
    if given and not args.certify:
        raise ConfigError(given[0], "goes with --certify")


def certify_command(args: argparse.Namespace) -> int:
    from imad.cli.decision_log_flags import log_selection
    from imad.commandline.entry import print_json
    from imad.router.certified import answers_from_corpus, answers_from_log, certify_router

    if args.max_error is None:
        raise ConfigError("--max-error", "--certify needs the largest acceptable error among kept "
                          "answers, e.g. --max-error 0.1")
    for flag in ("--debate-tokens", "--single-tokens"):
        if getattr(args, flag[2:].replace("-", "_")) is not None:
            raise ConfigError(flag, "goes with --token-budget, not --certify")
    alpha = parse_text(args.max_error, OPEN_UNIT, "--max-error")
    confidence = 0.95 if args.confidence is None else parse_text(args.confidence, OPEN_UNIT, "--confidence")
    budget = (None if args.max_trigger_rate is None
              else parse_text(args.max_trigger_rate, OPEN_UNIT, "--max-trigger-rate"))
    selection = log_selection(args)  # checks --log against --corpus, --since and --replica
    if selection is not None:
        since, replica = selection
        read = lambda router: answers_from_log(router, args.log, since=since, replica=replica)  # noqa: E731
    elif args.corpus:
        read = lambda router: answers_from_corpus(router, args.corpus)  # noqa: E731
    else:
        raise ConfigError("--corpus", "give the labelled answers to certify on: --log PATH (a "
                          "decision log with labels) or --corpus FILES")
    try:
        result = certify_router(args.router, read, alpha=alpha, delta=round(1.0 - confidence, 12),
                                max_trigger_rate=budget, out=args.out, overwrite=args.overwrite)
    except NotCertifiableError as error:
        answer = error.answer
        if args.json:
            print_json({"certificate": None, "infeasible": answer.to_dict()})
        else:
            for warning in answer.warnings:
                print(f"warning: {warning}")
        reason = "" if answer.reason == "not certifiable" else f" ({answer.reason})"
        raise NotCertifiableError(f"not certifiable{reason}: {answer.message}", answer) from None
    certificate = result.certificate
    if args.json:
        print_json({"checkpoint": str(result.checkpoint), "certificate": certificate.to_dict()})
        return 0
    print(f"certificate: {certificate.promise()}")
    print(f"tau: {certificate.tau:g}")
    print(f"labelled answers: {certificate.labelled}; kept at tau: {certificate.kept}, "
          f"{certificate.kept_errors} wrong; upper bound of the kept error: "
          f"{certificate.upper_bound:.4f} (at level {certificate.test_level:.4g})")
    for warning in certificate.warnings:
        print(f"warning: {warning}")
    print(f"hash: {certificate.hash}")
    print(f"checkpoint: {result.checkpoint}")
    return 0
