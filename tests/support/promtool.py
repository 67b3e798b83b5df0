"""PromQL evaluated by Prometheus's own engine: `promtool test rules` over given input series.

`evaluate(series, exprs)` writes one promtool unit test that expects every expression to return
nothing; promtool then reports what each one returned instead (`got: {labels} value, …`), which
is read back as a list of (labels, value). Counters are given as rates: a sample of value v
becomes a series rising by v every minute, so `rate(x[2m])` is v / 60 and ratios of rates are
ratios of the values. `$__rate_interval` and `$__range`, Grafana's, become 2m and 5m.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

GRAFANA_VARIABLES = {"$__rate_interval": "2m", "$__range": "5m"}
EVAL_TIME = "5m"
FAILED_EXPR = re.compile(r'^\s*expr: ("(?:[^"\\]|\\.)*"), time: [^\n]*\n\s*exp: [^\n]*\n'
                         r'\s*got: ([^\n]*)$', re.M)
SAMPLE = re.compile(r"(\{[^}]*\}) (\S+?)(?:, |$)")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def promtool() -> str | None:
    return shutil.which("promtool")


def series_of(samples: list[tuple[str, dict[str, str], float, bool]]) -> list[dict[str, str]]:
    """promtool `input_series` of (name, labels, value, is_counter) samples."""
    found = []
    for name, labels, value, counter in samples:
        selector = name + "{" + ",".join(f'{key}="{val}"' for key, val in sorted(labels.items())) + "}"
        found.append({"series": selector, "values": f"0+{value:g}x10" if counter else f"{value:g}x10"})
    return found


def grafana_to_promql(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


def evaluate(series: list[dict[str, str]], exprs: list[str]) -> dict[str, list[tuple[dict[str, str], float]]]:
    """What each expression of `exprs` returns at 5 minutes over `series` (empty when nothing)."""
    binary = promtool()
    if binary is None:
        raise FileNotFoundError("promtool is not installed")
    queries = [grafana_to_promql(expr) for expr in exprs]
    test = {"rule_files": [], "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": [
        {"expr": query, "eval_time": EVAL_TIME, "exp_samples": []} for query in queries]}]}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "dashboard_test.yml"
        path.write_text(json.dumps(test), encoding="utf-8")  # JSON is YAML
        run = subprocess.run([binary, "test", "rules", str(path)], capture_output=True, text=True,
                             timeout=120)
    output = run.stdout + run.stderr
    reported = FAILED_EXPR.findall(output)
    if run.returncode not in (0, 1) or len(reported) != len(re.findall(r"^\s*expr: ", output, re.M)):
        raise AssertionError(f"promtool could not evaluate the expressions:\n{output[-3000:]}")
    results: dict[str, list[tuple[dict[str, str], float]]] = {query: [] for query in queries}
    for quoted, got in reported:
        query = json.loads(quoted)
        if query not in results:
            raise AssertionError(f"promtool reported an expression not asked: {query}\n{output}")
        results[query] = [({key: value for key, value in LABEL.findall(labels)}, _number(value))
                          for labels, value in SAMPLE.findall(got)]
    return {expr: results[query] for expr, query in zip(exprs, queries, strict=True)}


def _number(text: str) -> float:
    return math.nan if text == "NaN" else float(text)
