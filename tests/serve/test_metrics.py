"""`GET /metrics`: auth, the Prometheus text format, and one outcome per admitted request."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest
from prometheus_client import values as values_module

from imad.decide.decision import non_finite_decision, unparsed_decision
from imad.decide.policy import FixedThreshold
from imad.pipeline import Pipeline
from imad.serve import ServeSettings
from imad.serve.metrics import (
    DECISION_LOG_ROWS,
    DECISION_OUTCOMES,
    OUTCOMES,
    SHADOW_DEBATES,
    ModelLabels,
    ServerMetrics,
    decision_outcome,
    sample_values,
)
from imad.serve.metrics_files import MULTIPROCESS_ENV
from imad.serve.openai.model_names import listed_model_names
from tests.serve.conftest import API_KEY
from tests.support.serving import echo_chat, echo_factory, tagged_question


def metrics_url(server) -> str:
    return server.base_url.removesuffix("/v1") + "/metrics"


def ask(server, model: str, index: int, key: str = API_KEY) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": tagged_question(index)}]}
    return httpx.post(f"{server.base_url}/chat/completions", headers={"Authorization": f"Bearer {key}"},
                      json=body, timeout=60)


def values(text: str, name: str) -> dict[tuple, float]:
    return {tuple(sorted(labels.items())): value for labels, value in sample_values(text, name)}


def test_metrics_need_the_key_like_v1_and_parse(start_server):
    server = start_server()
    assert httpx.get(metrics_url(server)).status_code == 401
    answered = [ask(server, "imad-svrmad-0", 1), ask(server, "imad-svrmad-1", 2)]
    assert [response.status_code for response in answered] == [200, 200]
    assert ask(server, "no-such-model", 3).status_code == 404
    assert ask(server, "imad", 4, key="wrong").status_code == 401
    response = httpx.get(metrics_url(server), headers={"Authorization": f"Bearer {API_KEY}"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    requests = values(text, "imad_requests_total")
    assert requests[(("code", "200"), ("model", "imad-svrmad-0"))] == 1
    assert requests[(("code", "404"), ("model", "invalid"))] == 1
    assert requests[(("code", "401"), ("model", "invalid"))] == 1
    decisions = {labels: value for labels, value in values(text, "imad_decisions_total").items() if value}
    assert decisions == {(("model", "imad-svrmad-0"), ("outcome", "kept")): 1,
                         (("model", "imad-svrmad-1"), ("outcome", "escalated_below_tau")): 1}
    tokens = values(text, "imad_tokens_total")
    assert tokens[(("kind", "prompt"), ("phase", "self_critique"))] > 0
    assert tokens[(("kind", "completion"), ("phase", "debate"))] > 0  # the escalated one debated
    upstream_calls = sum(v for _, v in sample_values(text, "imad_upstream_request_duration_seconds_count"))
    assert upstream_calls == sum(response.json()["imad"]["llm_calls"] for response in answered) > 2
    assert sum(v for _, v in sample_values(text, "imad_router_score_count")) == 2


def test_metrics_public_serves_them_without_the_key(start_server):
    server = start_server(ServeSettings(api_key=API_KEY, metrics_public=True))
    response = httpx.get(metrics_url(server))
    assert response.status_code == 200 and "imad_decisions_total" in response.text


def scrape(server) -> str:
    return httpx.get(metrics_url(server), headers={"Authorization": f"Bearer {API_KEY}"}).text


def test_budgets_export_tau_the_realized_rate_the_target_and_the_window(start_server):
    server = start_server(ServeSettings(api_key=API_KEY, target_trigger_rate=0.3, budget_window=10))
    listed = {(("model", name),) for name in listed_model_names()}
    before = scrape(server)  # the target is there before any request; τ comes with the first
    assert values(before, "imad_budget_target_trigger_rate") == dict.fromkeys(listed, 0.3)
    assert values(before, "imad_budget_window_answers") == dict.fromkeys(listed, 10)
    assert values(before, "imad_budget_tau") == {}
    for index in range(3):
        assert ask(server, "imad-acemad", index).status_code == 200
    assert ask(server, "imad-svrmad-0.4", 3).status_code == 200  # a name with its own budget
    text = scrape(server)
    assert set(values(text, "imad_budget_tau")) == {(("model", "imad-acemad"),),
                                                    (("model", "imad-svrmad-0.4"),)}
    assert 0.0 <= values(text, "imad_budget_realized_trigger_rate")[(("model", "imad-acemad"),)] <= 1.0
    suffixed = (("model", "imad-svrmad-0.4"),)
    assert values(text, "imad_budget_target_trigger_rate") == dict.fromkeys(listed | {suffixed}, 0.3)
    assert values(text, "imad_budget_window_answers") == dict.fromkeys(listed | {suffixed}, 10)


def test_a_reload_keeps_the_budget_target(start_server, tmp_path):
    """A reload changes the checkpoint, not the budget: the target and window stay exported."""
    from tests.router.router_helpers import make_router

    settings = ServeSettings(api_key=API_KEY, target_trigger_rate=0.3, budget_window=10)
    server = start_server(settings, echo_factory(router=make_router(seed=3)))
    checkpoint = make_router(seed=4).save(tmp_path / "next")
    response = httpx.post(f"{server.base_url}/imad/admin/reload", json={"router": str(checkpoint)},
                          headers={"Authorization": f"Bearer {API_KEY}"}, timeout=120)
    assert response.status_code == 200, response.text
    assert ask(server, "imad-0.7", 1).status_code == 200  # a name first seen after the reload
    text = scrape(server)
    assert values(text, "imad_router_reloads_total")[(("result", "ok"),)] == 1
    names = {*listed_model_names(), "imad-0.7"}
    assert values(text, "imad_budget_target_trigger_rate") == {(("model", n),): 0.3 for n in names}
    assert values(text, "imad_budget_window_answers") == {(("model", n),): 10 for n in names}


def test_without_a_budget_no_target_is_exported(start_server):
    server = start_server()
    assert ask(server, "imad", 1).status_code == 200
    text = scrape(server)
    assert "# TYPE imad_budget_target_trigger_rate gauge" in text  # the family, with no sample
    for family in ("imad_budget_target_trigger_rate", "imad_budget_window_answers", "imad_budget_tau"):
        assert values(text, family) == {}


def test_two_workers_report_the_target_once_and_tau_per_process(tmp_path, monkeypatch):
    """Under --workers every process sets the same target: prometheus_client's multiprocess
    collector keeps the largest (one series, no `pid`), not the sum; τ stays one per process."""
    monkeypatch.setenv(MULTIPROCESS_ENV, str(tmp_path))
    workers = []
    for pid, tau in ((101, 0.4), (102, 0.6)):  # two processes' value files, as two workers write them
        monkeypatch.setattr(values_module, "ValueClass", values_module.MultiProcessValue(lambda pid=pid: pid))
        metrics = ServerMetrics()
        metrics.set_budget_targets(["imad"], 0.25, 40)
        metrics.observe_budgets({"imad": {"threshold": tau, "realized_rate": 0.2, "target_rate": 0.25,
                                          "window": 40}})
        workers.append(metrics)
    text = workers[0].render()[0].decode()
    assert values(text, "imad_budget_target_trigger_rate") == {(("model", "imad"),): 0.25}
    assert values(text, "imad_budget_window_answers") == {(("model", "imad"),): 40}
    assert values(text, "imad_budget_tau") == {(("model", "imad"), ("pid", "101")): 0.4,
                                               (("model", "imad"), ("pid", "102")): 0.6}


def test_two_workers_counters_in_stats_are_summed_like_metrics(tmp_path, monkeypatch):
    """Under --workers, /v1/imad/stats' decision-log and shadow-debate counters are every
    worker's together, as /metrics has them, whichever worker answers."""
    from imad.decision_log.writer import LOG_EVENTS
    from imad.event_counts import EventCounts
    from imad.shadow import SHADOW_EVENTS

    monkeypatch.setenv(MULTIPROCESS_ENV, str(tmp_path))
    workers = []
    for pid, rows in ((101, 112), (102, 8)):  # two processes' value files, as two workers write them
        monkeypatch.setattr(values_module, "ValueClass", values_module.MultiProcessValue(lambda pid=pid: pid))
        metrics = ServerMetrics()
        log = EventCounts(LOG_EVENTS, on_count=metrics.count_decision_log)
        log.add("recorded", rows)
        log.add("written", rows)
        log.add("dropped_unwritable", 1)
        shadow = EventCounts(SHADOW_EVENTS, on_count=metrics.count_shadow_debate)
        shadow.add("submitted", rows // 4)
        workers.append((metrics, log, shadow))
    for metrics, log, shadow in workers:
        fleet = metrics.all_workers_counts(log, DECISION_LOG_ROWS)
        assert (fleet["recorded"], fleet["written"], fleet["pruned"]) == (120, 120, 0)
        assert fleet.group("dropped") == {"unwritable": 2}
        assert metrics.all_workers_counts(shadow, SHADOW_DEBATES)["submitted"] == 30
    metrics, log, _ = workers[1]
    assert sum(v for labels, v in sample_values(metrics.render()[0].decode(), "imad_decision_log_rows_total")
               if labels["event"] == "recorded") == 120


def test_one_process_stats_counters_are_its_own(monkeypatch):
    from imad.decision_log.writer import LOG_EVENTS
    from imad.event_counts import EventCounts

    monkeypatch.delenv(MULTIPROCESS_ENV, raising=False)
    log = EventCounts(LOG_EVENTS)
    assert ServerMetrics().all_workers_counts(log, DECISION_LOG_ROWS) is log


def test_health_shows_both_concurrency_limits_and_the_queue(start_server):
    server = start_server(ServeSettings(max_concurrency=6, max_queue=3, queue_timeout_s=2.5))
    health = httpx.get(server.base_url.removesuffix("/v1") + "/health").json()
    assert {key: health[key] for key in ("max_concurrency", "upstream_max_concurrency", "max_queue",
                                         "queue_timeout_s", "waiting", "in_flight")} == {
        "max_concurrency": 6, "upstream_max_concurrency": 1, "max_queue": 3, "queue_timeout_s": 2.5,
        "waiting": 0, "in_flight": 0}


@pytest.fixture(scope="module")
def answers():
    factory = echo_factory(echo_chat())
    pipeline = Pipeline(factory.router, factory.model, "svrmad", policy=FixedThreshold(0.0),
                        backend_options=factory.backend_options["svrmad"])
    kept = pipeline.answer(tagged_question(1))
    escalated = Pipeline(factory.router, factory.model, "svrmad", policy=FixedThreshold(1.0),
                         backend_options=factory.backend_options["svrmad"]).answer(tagged_question(2))
    return kept, escalated


def test_each_answer_has_exactly_one_outcome(answers):
    kept, escalated = answers
    decision = kept.decision
    cases = {
        "kept": kept,
        "escalated_below_tau": escalated,
        "escalated_unparsed": replace(escalated, decision=unparsed_decision("q", 0.5, "no JSON")),
        "escalated_non_finite": replace(escalated, decision=non_finite_decision("q", 0.5, float("nan"), 0.1)),
        "escalated_ood": replace(escalated, decision=replace(decision, escalate=True, ood=True,
                                                             ood_policy="escalate")),
        "escalated_certificate_violated": replace(kept, decision=replace(decision, escalate=True)),
        "fallback": replace(escalated, source="single_agent_fallback"),
        "no_answer": replace(escalated, source="none", answer=""),
    }
    assert {name: decision_outcome(answer) for name, answer in cases.items()} == {n: n for n in cases}
    assert set(cases) <= set(OUTCOMES)
    # every decision outcome has its metrics label, read from the decision, not recomputed
    assert {answer.decision.outcome for answer in cases.values()} == set(DECISION_OUTCOMES)


def test_model_labels_are_capped():
    labels = ModelLabels(limit=2)
    assert [labels.label(n) for n in ("a", "b", "c", "a", None)] == ["a", "b", "other", "a", "invalid"]


def test_an_answer_the_ood_detector_flagged_is_counted_by_model_whatever_the_policy_did():
    from types import SimpleNamespace

    metrics = ServerMetrics()
    for ood in (True, False, None, True):
        decision = SimpleNamespace(p=0.8, ood=ood, would_escalate=None)
        metrics.observe_answer(SimpleNamespace(decision=decision, trace=[]), "imad-svrmad")
    text = metrics.render()[0].decode()
    flagged = {labels["model"]: value for labels, value in sample_values(text, "imad_ood_flagged_total")}
    assert flagged == {"other": 0.0, "imad-svrmad": 2.0}
