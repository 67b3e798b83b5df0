"""The shipped dashboard's PromQL, evaluated by Prometheus's engine (`promtool`) over what the
server exports: no panel draws a NaN series, and in shadow mode the escalation panel draws each
model name's escalated share (0) and the would-escalate share instead of a lone NaN.

The input is the exposition of a `ServerMetrics` driven as a shadow-mode server drives it, every
counter sample read as a rate (tests/support/promtool.py). Skips where promtool is not installed
(Debian: `apt-get install prometheus`); tests/serve/test_dashboard.py checks names and labels
without it.
"""

from __future__ import annotations

import math

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from imad.serve.dashboard import dashboard
from imad.serve.metrics import ServerMetrics
from tests.support import promtool

pytestmark = pytest.mark.skipif(promtool.promtool() is None,
                                reason="needs promtool to evaluate PromQL (apt-get install prometheus)")


def exported_series(metrics: ServerMetrics) -> list[dict[str, str]]:
    samples = []
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        counter = family.type in ("counter", "histogram")
        samples += [(sample.name, sample.labels, sample.value, counter) for sample in family.samples
                    if not sample.name.endswith("_created")]
    return promtool.series_of(samples)


def shadow_server_metrics() -> ServerMetrics:
    """What `imad serve --shadow` exports after 4 answers of model `imad`, one of which the
    policy would have escalated (all are kept: a shadow decision's outcome is `kept`)."""
    metrics = ServerMetrics()
    for would_escalate in (True, False, False, False):
        metrics.count_request("imad", 200)
        metrics.count_outcome("imad", "kept", 0.2)
        metrics.score.observe(0.4 if would_escalate else 0.9)
        metrics.observe_score_batch(1, None)
        metrics.shadow_decisions.labels(would_escalate=str(would_escalate).lower()).inc()
        if would_escalate:  # the one unfamiliar answer: flagged, not escalated (policy "flag")
            metrics.ood_flagged.labels(model="imad").inc()
    metrics.observe_upstream_call(0.1, None)
    return metrics


def panel_targets(title: str) -> dict[str, str]:
    [panel] = [panel for panel in dashboard()["panels"] if panel["title"] == title]
    return {target["legendFormat"]: target["expr"] for target in panel["targets"]}


@pytest.fixture(scope="module")
def shadow_results() -> dict[str, list[tuple[dict[str, str], float]]]:
    exprs = [target["expr"] for panel in dashboard()["panels"] for target in panel["targets"]]
    return promtool.evaluate(exported_series(shadow_server_metrics()), exprs)


def test_no_panel_draws_a_nan_series(shadow_results):
    drawn_nan = {expr: labels for expr, samples in shadow_results.items()
                 for labels, value in samples if math.isnan(value)}
    assert drawn_nan == {}


def test_in_shadow_mode_the_escalation_panel_draws_each_model_and_the_would_escalate_share(shadow_results):
    targets = panel_targets("Escalation rate against the target")
    assert shadow_results[targets["escalated {{model}}"]] == [({"model": "imad"}, 0.0)]
    assert shadow_results[targets["would escalate (shadow)"]] == [({}, 0.25)]


def test_the_ood_panel_draws_the_flagged_share_beside_the_ood_escalations(shadow_results):
    """The report card's OOD share, live (answers the detector flagged over the scored ones),
    beside the OOD policy's escalations, 0 under the default flag policy, which the panel says."""
    [panel] = [panel for panel in dashboard()["panels"] if "OOD" in panel["title"]]
    assert panel["title"] == "OOD share"
    assert "--ood-policy flag" in panel["description"]
    targets = panel_targets("OOD share")
    assert shadow_results[targets["flagged OOD"]] == [({}, 0.25)]
    assert shadow_results[targets["escalated as OOD"]] == [({}, 0.0)]


def test_the_evaluator_reports_what_promql_returns():
    """The checker sees the NaN of a ratio whose two sides match only the idle `other` label."""
    series = promtool.series_of([
        ("imad_decisions_total", {"model": "imad", "outcome": "kept"}, 4.0, True),
        ("imad_decisions_total", {"model": "other", "outcome": "kept"}, 0.0, True),
        ("imad_decisions_total", {"model": "other", "outcome": "escalated_below_tau"}, 0.0, True)])
    ratio = ('sum by (model) (rate(imad_decisions_total{outcome=~"escalated_.*"}[$__rate_interval])) / '
             'sum by (model) (rate(imad_decisions_total{outcome=~"kept|escalated_.*"}[$__rate_interval]))')
    [(labels, value)] = promtool.evaluate(series, [ratio])[ratio]
    assert labels == {"model": "other"} and math.isnan(value)
    assert promtool.evaluate(series, ["sum(rate(nothing_total[2m]))"]) == {"sum(rate(nothing_total[2m]))": []}
