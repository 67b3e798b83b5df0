"""The shipped Grafana dashboard queries only what `/metrics` exports (issue 35 item 4).

Every PromQL expression of every panel is read by tests/support/promql_names.py (metric names,
`{label=...}` matchers, `by (...)` labels, `{{label}}` legends) and checked against an
exposition: the registry of `ServerMetrics` driven through each of its update calls (fast), and
the `/metrics` of a live `imad serve` in front of the loopback stub after a few requests (slow).
The checker itself is shown to fail on a panel naming a metric or label that does not exist.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from imad.cli.main import main
from imad.routing_options import DEFAULT_BUDGET_WINDOW
from imad.serve.dashboard import IMPORT_INPUT, dashboard
from imad.serve.metrics import ServerMetrics, sample_values
from imad.serve.openai.model_names import listed_model_names
from tests.conftest import REPO_ROOT
from tests.support.promql_names import Exported, PromQLError, Query, parse, problems
from tests.support.serve_process import ServeProcess, upstream_stub

QUIET = {"imad_upstream_errors", "imad_score_batch_failures", "imad_shadow_decisions",
         "imad_shadow_debates"}
"""The labelled families the live test's healthy stub and server without --shadow never give a
series (the registry test checks their labels)."""


def queries(board: dict) -> list[tuple[str, Query]]:
    """(panel title, query) of every target of every panel."""
    return [(panel["title"], parse(target["expr"], target.get("legendFormat", "")))
            for panel in board["panels"] for target in panel["targets"]]


def check(board: dict, text: str, unseen: set[str] = frozenset()) -> list[str]:
    exported = Exported.from_families(text_string_to_metric_families(text))
    return [f"{title}: {problem}" for title, query in queries(board)
            for problem in problems(query, exported, unseen=set(unseen))]


def driven_metrics() -> str:
    """The exposition of a registry after each update call once, so every labelled family has
    a series (one of each label)."""
    metrics = ServerMetrics()
    metrics.count_request("imad", 200)
    metrics.count_outcome("imad", "escalated_ood", 0.2)
    metrics.observe_budgets({"imad": {"threshold": 0.6, "realized_rate": 0.25, "target_rate": 0.2,
                                      "window": 500}})
    metrics.observe_upstream_call(0.1, TimeoutError())
    metrics.observe_score_batch(4, RuntimeError())
    metrics.count_decision_log("written", 1)
    metrics.set_load(2, 3)
    metrics.score.observe(0.7)
    metrics.shadow_decisions.labels(would_escalate="true").inc()
    metrics.count_shadow_debate("run", 1)
    metrics.count_reload("ok")
    return generate_latest(metrics.registry).decode()


def test_the_escalation_panel_draws_the_target_the_server_exports():
    """The target line is the server's own --target-trigger-rate, not a value typed into the
    dashboard (no variable but the data source is left); in shadow mode the would-escalate share
    is drawn beside it (tests/serve/test_dashboard_promql.py evaluates the expressions)."""
    board = dashboard()
    [panel] = [panel for panel in board["panels"] if panel["title"] == "Escalation rate against the target"]
    drawn = {name for target in panel["targets"] for name in parse(target["expr"]).metrics}
    assert drawn == {"imad_decisions_total", "imad_budget_realized_trigger_rate",
                     "imad_budget_target_trigger_rate", "imad_shadow_decisions_total"}
    assert [variable["name"] for variable in board["templating"]["list"]] == ["datasource"]


def test_every_panel_queries_what_the_registry_exports():
    board = dashboard()
    assert len(queries(board)) >= 20
    assert check(board, driven_metrics()) == []


def test_the_dashboard_covers_every_family_the_server_exports():
    """(The text format gives each counter's and histogram's `_created` its own gauge family.)"""
    queried = {name for _, query in queries(dashboard()) for name in query.metrics}
    exported = Exported.from_families(text_string_to_metric_families(driven_metrics()))
    families = {name for name in exported.types if not name.endswith("_created")}
    assert {exported.family(name) for name in queried} == families


@pytest.mark.parametrize(("expr", "legend", "problem"), [
    ("sum(rate(imad_request_total[5m]))", "", "imad_request_total: no such metric"),
    ("sum by (status) (rate(imad_requests_total[5m]))", "", "imad_requests_total: no label 'status'"),
    ('rate(imad_tokens_total{stage="debate"}[5m])', "", "imad_tokens_total: no label 'stage'"),
    ("sum(rate(imad_tokens_total[5m])) by (model)", "", "imad_tokens_total: no label 'model'"),
    ("histogram_quantile(0.5, sum by (le) (rate(imad_router_score_sum[5m])))", "",
     "imad_router_score_sum: no label 'le'"),
    ("imad_queue_depth_total", "", "imad_queue_depth_total: no such metric"),
    ("sum(imad_in_flight)", "{{model}}", "legend: no label 'model'"),
])
def test_the_checker_finds_a_panel_naming_what_is_not_exported(expr, legend, problem):
    board = {"panels": [{"title": "bad", "targets": [{"expr": expr, "legendFormat": legend}]}]}
    assert check(board, driven_metrics()) == [f"bad: {problem}"]


def test_a_family_with_no_series_must_be_declared_unseen():
    board = {"panels": [{"title": "t", "targets": [
        {"expr": "sum by (type) (rate(imad_upstream_errors_total[5m]))"}]}]}
    empty = generate_latest(ServerMetrics().registry).decode()
    assert check(board, empty) == ["t: imad_upstream_errors_total: no series to check its labels ['type']"]
    assert check(board, empty, {"imad_upstream_errors"}) == []


def test_the_tokenizer_refuses_what_it_cannot_read():
    with pytest.raises(PromQLError, match="cannot read"):
        parse("sum(rate(x[5m])) @ 100")
    with pytest.raises(PromQLError, match="unbalanced"):
        parse("sum by (le (rate(x[5m]))")


def test_print_dashboard_writes_the_package_json_without_a_model(capsys):
    assert main(["serve", "--router", "no-such-router", "--print-dashboard"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == dashboard()
    assert printed["__inputs"][0]["name"] == "DS_PROMETHEUS"
    variable = printed["templating"]["list"][0]
    assert (variable["type"], variable["current"]["value"]) == ("datasource", IMPORT_INPUT)
    assert {panel["datasource"]["uid"] for panel in printed["panels"]} == {"${datasource}"}


def test_datasource_uid_binds_the_data_source(capsys):
    assert main(["serve", "--print-dashboard", "--datasource-uid", "prom-1_a"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert "__inputs" not in printed
    assert printed["templating"]["list"][0]["current"] == {"text": "prom-1_a", "value": "prom-1_a"}
    assert IMPORT_INPUT not in json.dumps(printed)


def test_print_dashboard_imports_no_server_dependency():
    code = ("import sys; from imad.cli.main import main; main(['serve', '--print-dashboard']); "
            "print(sorted(m for m in ('torch', 'fastapi', 'uvicorn', 'spacy') if m in sys.modules),"
            " file=sys.stderr)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                         check=True)
    assert json.loads(run.stdout)["uid"] == "imad-serve"
    assert run.stderr.strip() == "[]"


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_every_panel_queries_what_a_live_server_exports(workers, tmp_path):
    """A real `imad serve` (scoring process, trigger budget, decision log; one process, or two
    workers whose values prometheus_client sums from files) after a few answered requests; the
    budget's target is exported once per model name whatever the number of workers."""
    pytest.importorskip("fastapi")
    pytest.importorskip("spacy")
    from tests.router.router_helpers import make_router

    router_dir = make_router(seed=5).save(tmp_path / "router")
    with upstream_stub() as upstream:
        server = ServeProcess(router_dir, upstream, tmp_path, "--workers", workers,
                              "--target-trigger-rate", "0.5", "--decision-log",
                              str(tmp_path / "decisions.sqlite"))
        try:
            server.wait_ready(workers=int(workers))
            assert [server.post(index).status_code for index in range(4)] == [200] * 4
            assert httpx.post(f"{server.url}/v1/chat/completions", json={}, timeout=30).status_code == 400
            text = server.metrics()
        finally:
            server.stop()
    exported = Exported.from_families(text_string_to_metric_families(text))
    quiet = {family for family in QUIET if exported.labels_of(f"{family}_total") is None}
    assert quiet == QUIET
    assert check(dashboard(), text, QUIET) == []
    assert {"code", "model"} <= exported.labels["imad_requests_total"]
    assert {"model"} <= exported.labels["imad_budget_tau"]
    # every worker sets the same target: one series per model name (not one per worker, nor their sum)
    for family, value in (("imad_budget_target_trigger_rate", 0.5),
                          ("imad_budget_window_answers", DEFAULT_BUDGET_WINDOW)):
        assert sorted(sample_values(text, family), key=str) == [
            ({"model": name}, value) for name in sorted(listed_model_names())]
