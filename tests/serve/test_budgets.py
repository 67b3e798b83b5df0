"""`imad serve --target-trigger-rate`: one trigger budget per model name, shared by concurrent
requests, reported by /v1/imad/stats, and recorded in every decision (issue 16)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from imad.errors import ConfigError, ServeError
from imad.llm.scripted import ScriptedChat
from imad.llm.types import ChatRequest, ChatResponse
from imad.serve import ServeSettings
from imad.serve.budgets import MAX_BUDGETS, BudgetBook
from imad.serve.openai.model_names import ModelChoice
from tests.router.router_helpers import make_router
from tests.serve.conftest import API_KEY
from tests.support.serving import echo_factory, echo_respond, tagged_question

CONCURRENT = 16
AUTH = {"Authorization": f"Bearer {API_KEY}"}


class BarrierChat(ScriptedChat):
    """The echo model, whose self-critique calls wait until CONCURRENT of them are in flight:
    every request observes its score in the budget while the others do (no sleeps)."""

    def __init__(self) -> None:
        super().__init__(echo_respond)
        self.barrier = threading.Barrier(CONCURRENT)

    def chat(self, request: ChatRequest) -> ChatResponse:
        if "critique" in (request.json_schema or {}).get("properties", {}):
            self.barrier.wait(timeout=30)
        return super().chat(request)


def post(server, model: str, index: int) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", timeout=60, headers=AUTH,
                      json={"model": model, "messages": [{"role": "user",
                                                          "content": tagged_question(index)}]})


def stats_of(server) -> dict:
    return httpx.get(f"{server.base_url}/imad/stats", headers=AUTH).json()


def test_budget_under_16_concurrent_requests_loses_nothing(start_server):
    settings = ServeSettings(api_key=API_KEY, max_concurrency=CONCURRENT, target_trigger_rate=0.25,
                             budget_window=8)
    factory = echo_factory(BarrierChat())
    server = start_server(settings, factory)
    with ThreadPoolExecutor(CONCURRENT) as pool:
        replies = list(pool.map(lambda i: post(server, "imad-svrmad", i), range(CONCURRENT)))
    assert [r.status_code for r in replies] == [200] * CONCURRENT
    decisions = [r.json()["imad"] for r in replies]
    headers = [json.loads(r.headers["X-Imad-Decision"]) for r in replies]
    # window 8 → a warm-up of 4 scores: 3 answers at the checkpoint's τ, 13 at the budget's.
    assert sorted(d["tau_source"] for d in decisions) == ["budget"] * 13 + ["checkpoint"] * 3
    assert [h["tau_source"] for h in headers] == [d["tau_source"] for d in decisions]
    stored = factory.router.config.threshold.tau
    assert all(d["tau"] == stored for d in decisions if d["tau_source"] == "checkpoint")
    assert all(d["ood"] is None and d["ood_score"] is None for d in decisions)  # no statistics
    stats = stats_of(server)
    budget = stats["budgets"]["imad-svrmad"]
    assert list(stats["budgets"]) == ["imad-svrmad"]
    assert budget["observed_total"] == CONCURRENT and budget["answers_in_window"] == 8
    assert (stats["target_trigger_rate"], stats["budget_window"]) == (0.25, 8)
    assert budget["from_budget"] is True and budget["target_rate"] == 0.25


def test_each_model_name_has_its_own_budget_starting_at_its_tau(start_server):
    server = start_server(ServeSettings(api_key=API_KEY, target_trigger_rate=0.2), echo_factory())
    first = post(server, "imad-acemad-0", 1).json()["imad"]
    second = post(server, "imad-acemad-1", 2).json()["imad"]
    assert (first["tau"], first["tau_source"], first["escalated"]) == (0.0, "request", False)
    assert (second["tau"], second["tau_source"], second["escalated"]) == (1.0, "request", True)
    assert sorted(stats_of(server)["budgets"]) == ["imad-acemad-0", "imad-acemad-1"]


def test_stats_without_a_budget_and_behind_auth(start_server):
    server = start_server()
    assert httpx.get(f"{server.base_url}/imad/stats").status_code == 401
    stats = stats_of(server)
    assert stats["budgets"] == {} and stats["target_trigger_rate"] is None
    assert stats["ood_statistics"] is False and stats["ood_policy"] == "flag"


def test_the_book_refuses_a_model_name_beyond_its_size():
    book = BudgetBook(0.2, 100, make_router(tau=0.7))
    for index in range(MAX_BUDGETS):
        book.budget_for(ModelChoice(f"imad-acemad-0.{index}", "acemad", index / 100))
    with pytest.raises(ServeError, match=f"trigger budgets for {MAX_BUDGETS} model names") as caught:
        book.budget_for(ModelChoice("imad-acemad-0.999", "acemad", 0.999))
    assert caught.value.status == 400
    known = book.budget_for(ModelChoice("imad-acemad-0.1", "acemad", 0.01))
    assert known is book.budget_for(ModelChoice("imad-acemad-0.1", "acemad", 0.01))


@pytest.mark.parametrize(("fields", "flag"), [
    ({"target_trigger_rate": 0.0}, "--target-trigger-rate"),
    ({"target_trigger_rate": 1.0}, "--target-trigger-rate"),
    ({"budget_window": 0}, "--budget-window"),
    ({"ood_policy": "ignore"}, "--ood-policy"),
])
def test_bad_budget_settings_name_the_flag(fields, flag):
    with pytest.raises(ConfigError) as caught:
        ServeSettings(**fields)
    assert caught.value.field == flag


def test_ood_policy_escalate_needs_statistics_and_is_reported(start_server):
    import numpy as np

    from imad.router.ood import MahalanobisOOD

    with pytest.raises(ConfigError, match="ood_policy: 'escalate' needs OOD statistics"):
        start_server(ServeSettings(api_key=API_KEY, ood_policy="escalate"), echo_factory())
    router = make_router(tau=0.0)
    n = len(router.feature_names)
    far = router.with_ood(MahalanobisOOD(1e-6, np.full(n, 50.0), np.eye(n), 0.0))  # flags all
    server = start_server(ServeSettings(api_key=API_KEY, ood_policy="escalate"), echo_factory(router=far))
    info = post(server, "imad-acemad", 3).json()["imad"]
    assert info["ood"] is True and info["ood_score"] > 1 and info["ood_policy"] == "escalate"
    assert info["escalated"] is True and info["source"] == "debate"  # kept by τ = 0, escalated by OOD
    assert any("(ood_policy escalate)" in reason for reason in info["reasons"])
    assert stats_of(server)["ood_statistics"] is True and stats_of(server)["ood_policy"] == "escalate"


def test_the_servers_own_names_get_a_budget_after_the_cap_is_reached():
    book = BudgetBook(0.2, 100, make_router(tau=0.7))
    for index in range(MAX_BUDGETS):
        book.budget_for(ModelChoice(f"imad-svrmad-0.{index}", "svrmad", index / 100))
    own = [book.budget_for(ModelChoice(name, name.removeprefix("imad-") if "-" in name else "acemad",
                                       None)) for name in ("imad", "imad-acemad", "imad-svrmad")]
    assert len({id(budget) for budget in own}) == 3
    assert sorted(book.stats())[:3] == ["imad", "imad-acemad", "imad-svrmad"]
    with pytest.raises(ServeError, match="trigger budgets"):
        book.budget_for(ModelChoice("imad-svrmad-0.999", "svrmad", 0.999))


def test_stats_report_the_tau_that_requests_use(start_server):
    """/v1/imad/stats' `tau` is the τ of a request without a suffix: --tau when set, not the
    checkpoint's."""
    factory = echo_factory()
    server = start_server(ServeSettings(api_key=API_KEY, default_tau=0.37), factory)
    decision = post(server, "imad", 1).json()["imad"]
    assert factory.router.config.threshold.tau != 0.37
    assert (decision["tau"], decision["tau_source"]) == (0.37, "request")
    assert stats_of(server)["tau"] == 0.37


def test_stats_report_the_checkpoints_tau_without_a_tau_flag(start_server):
    factory = echo_factory()
    server = start_server(ServeSettings(api_key=API_KEY), factory)
    decision = post(server, "imad", 1).json()["imad"]
    assert decision["tau_source"] == "checkpoint"
    assert stats_of(server)["tau"] == decision["tau"] == factory.router.config.threshold.tau
