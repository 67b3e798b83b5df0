"""`imad report`: the report card of a decision log — is the gate worth it on this traffic?

    imad report --log decisions.db
    imad report --log decisions.db --since 2026-12-01 --model gpt-x --out report/
    imad report --log decisions.db --json
    imad report --log postgresql://imad@db/imad --replica web-2 --json

Volume and escalation (served and would-be) by model and window, OOD share, drift of p (PSI),
and on labelled answers AUROC, ECE, Brier and kept-answer accuracy with 95% bootstrap
intervals, the reliability diagram and the deferral curve beside the verbal confidence, a
random and the oracle gate; on shadow-debated answers, what the debate changed by decile of p.
Without --out the markdown goes to standard output (no pictures); --json prints the card.
"""

from __future__ import annotations

import argparse
import sys

from imad.cli.log import LOG_HELP
from imad.cli.time_flags import SINCE_FORMS
from imad.decision_log.replica import REPLICA_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log", required=True, metavar="PATH|URL", help=LOG_HELP)
    parser.add_argument("--replica", default=None, metavar="HOST[:PID]", help=REPLICA_HELP)
    parser.add_argument("--since", default=None, metavar="T", help=f"only decisions from T: {SINCE_FORMS}")
    parser.add_argument("--model", default=None, metavar="NAME", help="only this served model name")
    parser.add_argument("--router", default=None, metavar="NAME|HASH",
                        help="only the decisions of this router: its name, or the start of its "
                             "content hash (router_hash); a log that holds several is split by "
                             "router anyway")
    parser.add_argument("--window", default="1d", metavar="W",
                        help="time window of the per-window rates and drift: 30m, 6h, 1d, 7d "
                             "(default: %(default)s)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="write report.md, reliability.png and deferral.png into DIR")
    parser.add_argument("--json", action="store_true", help="print the report card as JSON")
    parser.add_argument("--certificate", default=None, metavar="DIR",
                        help="a checkpoint directory: its certificate and the live check of its "
                             "promise on the log's labels")
    parser.add_argument("--max-error", default=None, metavar="A",
                        help="show what can be certified at this error among kept answers")
    parser.add_argument("--confidence", default=None, metavar="C",
                        help="with --max-error: the confidence (default 0.95)")


def run(args: argparse.Namespace) -> int:
    from imad.cli.common import print_json
    from imad.cli.time_flags import parse_since, parse_window
    from imad.report import report_card, write_report
    from imad.report.markdown import render_markdown

    since = None if args.since is None else parse_since(args.since)
    window_s = parse_window(args.window)
    from imad.cli.certify import OPEN_UNIT
    from imad.constraints import parse_text
    from imad.decision_log.replica import parse_replica

    alpha = None if args.max_error is None else parse_text(args.max_error, OPEN_UNIT, "--max-error")
    confidence = (0.95 if args.confidence is None
                  else parse_text(args.confidence, OPEN_UNIT, "--confidence"))
    card = report_card(args.log, since=since, model=args.model, window_s=window_s,
                       router=args.router, certified=args.certificate, alpha=alpha,
                       delta=round(1.0 - confidence, 12), replica=parse_replica(args.replica))
    if args.out is not None:
        written = write_report(card, args.out)
        print(f"wrote {', '.join(str(path) for path in written)}", file=sys.stderr)
    if args.json:
        print_json(card, allow_nan=False)  # the card holds no NaN: a guard, not a rule
    elif args.out is None:
        sys.stdout.write(render_markdown(card, {}))
    return 0
