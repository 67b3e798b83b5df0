"""The metric names and labels a PromQL expression queries, and a check of them against what a
`/metrics` exposition exports (tests/serve/test_dashboard.py).

A small tokenizer, not a PromQL parser: it knows what the shipped dashboard uses. An
identifier followed by `(` is a function or aggregation, keywords and Grafana `$variables` are
skipped, `[...]` ranges are dropped, `{label op "value"}` matchers name labels of the metric
before them, `by (labels)` names labels of every metric inside the group it aggregates (the
parenthesized group after it, or before it in the `sum(...) by (...)` form), and Grafana's
`{{label}}` legends name labels of some metric of the expression. A sample name's histogram
(`_bucket`, `_sum`, `_count`) or counter (`_total`, `_created`) suffix maps it to its family;
`le` is a label of `_bucket` samples only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

TOKEN = re.compile(r'\s+|(?P<string>"(?:[^"\\]|\\.)*")|(?P<range>\[[^\]]*\])'
                   r"|(?P<var>\$\w+)|(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)|(?P<number>\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
                   r"|(?P<op>=~|!~|!=|==|>=|<=|[-+*/%^<>=(){},])")
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset"}
MATCHERS = {"=", "!=", "=~", "!~"}
LEGEND = re.compile(r"\{\{\s*(\w+)\s*\}\}")
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count", "_created"), "counter": ("_total", "_created"),
            "gauge": ("",)}


class PromQLError(ValueError):
    """An expression this tokenizer cannot read."""


@dataclass
class Query:
    """What one expression asks of the exposition: each metric with the labels it needs."""

    metrics: dict[str, set[str]] = field(default_factory=dict)
    legend_labels: set[str] = field(default_factory=set)


def tokens(expr: str) -> list[tuple[str, str]]:
    found, position = [], 0
    while position < len(expr):
        match = TOKEN.match(expr, position)
        if match is None:
            raise PromQLError(f"cannot read {expr[position:position + 20]!r} in {expr!r}")
        position = match.end()
        if match.lastgroup is not None:
            found.append((match.lastgroup, match.group()))
    return found


def _group_end(items: list[tuple[str, str]], start: int) -> int:
    """Index of the `)` that closes the `(` at `start`."""
    depth = 0
    for index in range(start, len(items)):
        depth += {"(": 1, ")": -1}.get(items[index][1], 0) if items[index][0] == "op" else 0
        if depth == 0:
            return index
    raise PromQLError("unbalanced parentheses")


def _group_start(items: list[tuple[str, str]], end: int) -> int:
    """Index of the `(` that the `)` at `end` closes."""
    depth = 0
    for index in range(end, -1, -1):
        depth += {")": 1, "(": -1}.get(items[index][1], 0) if items[index][0] == "op" else 0
        if depth == 0:
            return index
    raise PromQLError("unbalanced parentheses")


def parse(expr: str, legend: str = "") -> Query:
    """The metrics `expr` queries and the labels each must carry (see the module docstring)."""
    items = tokens(expr)
    query = Query(legend_labels=set(LEGEND.findall(legend)))
    at_metric: dict[int, str] = {}
    index = 0
    while index < len(items):
        kind, text = items[index]
        following = items[index + 1][1] if index + 1 < len(items) else ""
        if kind == "name" and text in ("by", "without"):
            index = _group_end(items, index + 1)
        elif kind == "name" and text not in KEYWORDS and following not in ("(", "by", "without"):
            query.metrics.setdefault(text, set())
            at_metric[index] = text
            if following == "{":
                close = next(i for i in range(index + 1, len(items)) if items[i][1] == "}")
                query.metrics[text] |= {items[i][1] for i in range(index + 2, close)
                                        if items[i][0] == "name" and items[i + 1][1] in MATCHERS}
                index = close
        index += 1
    for index, (kind, text) in enumerate(items):
        if kind == "name" and text in ("by", "without"):
            _aggregated(items, index, expr, at_metric, query)
    return query


def _aggregated(items: list[tuple[str, str]], index: int, expr: str, at_metric: dict[int, str],
                query: Query) -> None:
    """The labels of the `by (...)` at `index` required of every metric in the group it aggregates."""
    close = _group_end(items, index + 1)
    labels = {value for kind, value in items[index + 2:close] if kind == "name"}
    if close + 1 < len(items) and items[close + 1][1] == "(":
        scope = range(close + 1, _group_end(items, close + 1))
    elif index > 0 and items[index - 1][1] == ")":
        scope = range(_group_start(items, index - 1), index)
    else:
        raise PromQLError(f"`{items[index][1]}` with no group to aggregate in {expr!r}")
    for position in scope:
        if position in at_metric:
            query.metrics[at_metric[position]] |= labels


@dataclass
class Exported:
    """Every family of an exposition: its type and, per sample name, the labels seen."""

    types: dict[str, str]
    labels: dict[str, set[str]]

    @classmethod
    def from_families(cls, families: Iterable) -> Exported:
        types, labels = {}, {}
        for family in families:
            types[family.name] = family.type
            for sample in family.samples:
                labels.setdefault(sample.name, set()).update(sample.labels)
        return cls(types, labels)

    def family(self, name: str) -> str | None:
        """The family sample `name` belongs to, or None when nothing exports it."""
        for family, kind in self.types.items():
            if any(name == family + suffix for suffix in SUFFIXES.get(kind, ("",))):
                return family
        return None

    def labels_of(self, name: str) -> set[str] | None:
        """The labels of sample `name`'s series, None when it has none to look at (a labelled
        family no series of which exists yet); `le` only on `_bucket` samples."""
        if name in self.labels:
            return self.labels[name]
        family = self.family(name)
        siblings = [labels for sample, labels in self.labels.items() if self.family(sample) == family]
        if not siblings:
            return None
        common = set().union(*siblings) - {"le"}
        return common | {"le"} if name.endswith("_bucket") else common


def problems(query: Query, exported: Exported, *, unseen: set[str]) -> list[str]:
    """What `query` asks that `exported` does not export; a family with no series yet (which a
    multiprocess exposition leaves out altogether) must be listed in `unseen` (its labels are
    then not checked here), anything else is a problem."""
    found = []
    everyone: set[str] = set()
    for name, labels in query.metrics.items():
        family = exported.family(name)
        if family is None and any(name.startswith(f"{quiet}_") for quiet in unseen):
            continue  # a multiprocess exposition leaves out a family no process has touched
        if family is None:
            found.append(f"{name}: no such metric")
            continue
        have = exported.labels_of(name)
        if have is None:
            if family not in unseen:
                found.append(f"{name}: no series to check its labels {sorted(labels)}")
            continue
        everyone |= have
        found += [f"{name}: no label {label!r}" for label in sorted(labels - have)]
    if query.metrics and all(exported.labels_of(name) is not None for name in query.metrics):
        found += [f"legend: no label {label!r}" for label in sorted(query.legend_labels - everyone)]
    return found
