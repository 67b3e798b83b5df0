"""MkDocs hook: pages that would drift if written by hand are generated from the code at build time.

A page asks for a generated part with an HTML comment on its own line, `<!-- generate: NAME -->`;
`GENERATORS` maps each name to a function returning Markdown. The CLI reference is every parser's
own `--help`, the decision tables are `imad.decide.schema`'s fields, the training metrics are
`training.metrics.METRICS`: a flag, a field or a metric added in the code shows up here with no edit.
The sample report cards are `imad report`'s own output on seeded logs (`sample_card`).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
if str(DOCS / "hooks") not in sys.path:  # its sibling modules, however MkDocs loaded this one
    sys.path.insert(0, str(DOCS / "hooks"))
import sample_card  # noqa: E402

TRAINING_COMMANDS = ("training.corpus", "training.fit", "training.calibrate", "training.evaluate",
                     "training.export", "training.scoreboard")
"""The `python -m` entry points documented beside `imad`'s sub-commands."""


def _help_of(main: Callable[[list[str]], object]) -> str:
    """What `main(["--help"])` prints: argparse's help, exactly as a user sees it."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(["--help"])
    return out.getvalue().rstrip()


def _fence(text: str) -> str:
    return f"```text\n{text}\n```\n"


def cli_reference() -> str:
    """One section per `imad` sub-command and per training entry point, from its parser."""
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal; the page has a fixed width
    from imad.cli.main import build_parser

    parser = build_parser()
    parts = ["## imad\n", _fence(parser.format_help().rstrip())]
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in commands.choices.items():
        parts += [f"## imad {name}\n", _fence(sub.format_help().rstrip())]
    for module_name in TRAINING_COMMANDS:
        module = importlib.import_module(module_name)
        parts += [f"## python -m {module_name}\n", _fence(_help_of(module.main))]
    return "\n".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def decision_schema() -> str:
    """A row per `imad.decide.schema.FIELDS` entry: name, type, meaning and the views carrying it."""
    from imad.decide.schema import FIELDS, VIEWS

    rows = ["| field | type | meaning | values / unit | views (key where renamed) |",
            "|---|---|---|---|---|"]
    for field in FIELDS:
        kind = (field.type + (f" of {field.items}" if field.items else "")
                + (", nullable" if field.nullable else ""))
        values = ", ".join(f"`{v}`" for v in field.values) or (field.unit or "")
        views = ", ".join(f"{v} (`{field.keys[v]}`)" if v in field.keys else v
                          for v in VIEWS if v in field.views)
        rows.append(f"| `{field.name}` | {kind} | {_cell(field.meaning)} | {_cell(values)} | {views} |")
    legend = ["", "| view | where it appears |", "|---|---|"]
    legend += [f"| `{name}` | {_cell(where)} |" for name, where in VIEWS.items()]
    return "\n".join(rows + legend) + "\n"


def decision_log_columns() -> str:
    """The `decisions` table's columns: the schema's `log` view with their SQLite types."""
    from imad.decide.schema import fields_of

    rows = ["| column | SQLite type | meaning |", "|---|---|---|"]
    rows += [f"| `{f.key('log')}` | {f.sqlite_type} | {_cell(f.meaning)} |" for f in fields_of("log")]
    return "\n".join(rows) + "\n"


def training_metrics() -> str:
    """Every `@metric` of `training.metrics`, with the first line of its docstring."""
    from training.metrics import METRICS

    rows = ["| name | title | what it measures |", "|---|---|---|"]
    for metric in METRICS.values():
        doc = (metric.compute.__doc__ or "").strip().splitlines()
        rows.append(f"| `{metric.name}` | {_cell(metric.title)} | {_cell(doc[0] if doc else '')} |")
    return "\n".join(rows) + "\n"


def example_labels() -> str:
    """The example label file, `docs/examples/labels.jsonl`, as the page shows it."""
    return "```json\n" + (DOCS / "examples" / "labels.jsonl").read_text(encoding="utf-8") + "```\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference, "decision-schema": decision_schema,
    "decision-log-columns": decision_log_columns, "training-metrics": training_metrics,
    "example-labels": example_labels, "sample-card-signal": sample_card.signal_card,
    "sample-card-no-signal": sample_card.no_signal_card,
}
MARKER = re.compile(r"^<!-- generate: ([\w-]+) -->$", re.MULTILINE)


def expand(markdown: str) -> str:
    """`markdown` with every generate marker replaced by its generator's output."""
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise KeyError(f"unknown generated part {name!r}; known: {sorted(GENERATORS)}")
        return GENERATORS[name]()
    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, **_: object) -> str:
    return expand(markdown)


def api_reference() -> str:
    """A mkdocstrings block per public `imad` name (`imad._EXPORTS`), where each is defined."""
    import imad

    options = "    options:\n      show_root_heading: false\n"
    return "\n".join(f"## `imad.{name}`\n\n::: {module}.{name}\n{options}"
                     for name, module in imad._EXPORTS.items())


GENERATORS["api"] = api_reference
