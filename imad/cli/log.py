"""`imad log`: export a decision log for a warehouse, or import outcome labels in bulk.

    imad log export --log decisions.db --format jsonl --out decisions.jsonl
    imad log export --log decisions.db --format parquet --out decisions.parquet
    imad log label --log decisions.db labels.jsonl

Labels are JSON lines `{"id": "<completion id>", "correct": true|false, "source"?:
"user"|"judge"|"gold", "debate_correct"?: true|false}`, applied all or nothing
(`imad.decision_log.labels`). `--log` is a SQLite file or the postgresql:// URL a fleet of
servers writes to (`imad.decision_log.location`).
"""

from __future__ import annotations

import argparse
import sys

from imad.cli.time_flags import SINCE_FORMS

LOG_HELP = "the decision log: a SQLite file or a postgresql:// URL"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="log_action", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="write the log as JSON lines or Parquet",
                                description="write the log as JSON lines or Parquet")
    export.add_argument("--log", required=True, metavar="PATH|URL", help=LOG_HELP)
    export.add_argument("--format", required=True, choices=("jsonl", "parquet"))
    export.add_argument("--out", default=None, metavar="FILE",
                        help="output file (default for jsonl: standard output)")
    export.add_argument("--since", default=None, metavar="T", help=f"only decisions from T: {SINCE_FORMS}")
    export.add_argument("--model", default=None, metavar="NAME", help="only this served model name")
    label = actions.add_parser("label", help="import outcome labels from a JSON-lines file",
                               description="import outcome labels from a JSON-lines file "
                                           "(all or nothing)")
    label.add_argument("--log", required=True, metavar="PATH|URL", help=LOG_HELP)
    label.add_argument("labels", metavar="FILE.jsonl",
                       help='one {"id", "correct", "source"?, "debate_correct"?} per line')
    label.add_argument("--json", action="store_true", help="print JSON instead of text")


def run(args: argparse.Namespace) -> int:
    from imad.decision_log.location import open_for_reading

    if args.log_action == "export":
        from imad.cli.time_flags import parse_since
        from imad.decision_log.export import export_log

        since = None if args.since is None else parse_since(args.since)
        store = open_for_reading(args.log)
        try:
            count = export_log(store, args.format, args.out, since=since, model=args.model)
        finally:
            store.close()
        if args.out is not None:
            print(f"exported {count} decisions to {args.out}", file=sys.stderr)
        return 0
    from imad.cli.common import print_json
    from imad.decision_log.labels import import_label_file

    store = open_for_reading(args.log, writable=True)
    try:
        result = import_label_file(store, args.labels)
    finally:
        store.close()
    if args.json:
        print_json({"added": result.added, "replaced": result.replaced})
    else:
        print(f"labelled {result.added + result.replaced} decisions ({result.added} new, "
              f"{result.replaced} replaced)")
    return 0
