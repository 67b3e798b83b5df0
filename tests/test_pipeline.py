"""The pipeline end to end: kept and escalated answers, token totals, failures recorded."""

from __future__ import annotations

import json

import pytest

from imad.decide import checkpoint_policy, new_budget
from imad.decide.budget import TriggerBudget
from imad.decide.policy import FixedThreshold, Policy
from imad.errors import ConfigError, LLMServerError
from imad.llm.scripted import ScriptedChat
from imad.pipeline import Pipeline
from imad.question import Question, TaskType
from tests.router.router_helpers import make_router
from training.data import load_questions

MCQ = Question("Which drug is an opioid?", TaskType.MULTIPLE_CHOICE,
               ("Aspirin", "Ibuprofen", "Paracetamol", "Morphine"), id="q1")
CRITIQUE = {"initial_answer": "D", "initial_reasoning": "Morphine binds the mu opioid receptor.",
            "critique": "Paracetamol might be argued for, but it is not an opioid at all.",
            "alternative_answer": "C", "final_answer": "D",
            "confidence_initial": 90, "confidence_critique": 10}


def scripted(request):
    """Self-critique calls get the critique; debate calls get a valid one-option answer."""
    schema = request.json_schema or {}
    if "critique" in schema.get("properties", {}):
        return json.dumps(CRITIQUE)
    properties = schema.get("properties", {})
    answer = {name: ("D" if name == "answer" else 0.9 if "confidence" in name else "Because D.")
              for name in properties}
    return json.dumps(answer or {"answer": "D"})


def small_pipeline(chat, tau, backend="svrmad"):
    options = {"n_agents": 3, "consensus_agree": 3} if backend == "svrmad" else {"n_agents": 2, "n_rounds": 1}
    policy = None if tau is None else FixedThreshold(tau)
    return Pipeline(make_router(), chat, backend, policy=policy, backend_options=options)


def check_totals(result):
    assert result.prompt_tokens == sum(c["prompt_tokens"] for c in result.trace)
    assert result.completion_tokens == sum(c["completion_tokens"] for c in result.trace)
    critique_tokens = result.critique.prompt_tokens + result.critique.completion_tokens
    debate_tokens = result.debate.total_tokens if result.debate else 0
    assert result.total_tokens == critique_tokens + debate_tokens


def test_kept_when_tau_is_zero():
    chat = ScriptedChat(scripted)
    result = small_pipeline(chat, tau=0.0).answer(MCQ)
    assert (result.source, result.answer, result.escalated) == ("single_agent", "D", False)
    assert len(chat.calls) == 1 and len(result.trace) == 1
    check_totals(result)


def test_escalated_when_tau_is_one():
    chat = ScriptedChat(scripted)
    result = small_pipeline(chat, tau=1.0).answer(MCQ)
    assert result.source == "debate" and result.escalated and result.debate is not None
    assert result.answer == result.debate.final_answer
    assert len(result.trace) == 1 + result.debate.n_calls == len(chat.calls)
    assert "seed_opening:agent_0" in result.debate.flags  # the self-critique was not paid twice
    check_totals(result)


def test_unparseable_critique_escalates_with_the_reason():
    def garbage_first(request):
        return "not json" if "critique" in (request.json_schema or {}).get("properties", {}) \
            else scripted(request)

    result = small_pipeline(ScriptedChat(garbage_first), tau=0.0).answer(MCQ)
    assert result.escalated and result.decision.parse_status == "unparsed"
    assert "parse_error" in result.decision.reasons[0] or "parse_error" in (result.decision.parse_error or "")
    assert result.source == "debate"


def test_failed_debate_falls_back_to_the_self_critique_answer():
    def fail_debate(request):
        if "critique" in (request.json_schema or {}).get("properties", {}):
            return json.dumps(CRITIQUE)
        raise LLMServerError("HTTP 503")

    result = small_pipeline(ScriptedChat(fail_debate), tau=1.0).answer(MCQ)
    assert result.source in ("single_agent_fallback", "debate")
    if result.source == "single_agent_fallback":
        assert result.answer == "D" and "503" in result.error


class EmptyDebate:
    """A debate back-end that ends without an answer (its agents agreed on nothing)."""

    name = "empty"

    def run(self, question, seed_response=None):
        from imad.debate import DebateResult

        return DebateResult("empty", "", (), (), "no_answer")


@pytest.mark.parametrize(("critique", "source", "answer"),
                         [(CRITIQUE, "single_agent_fallback", "D"), (None, "none", "")])
def test_a_debate_without_an_answer_serves_the_self_critique_answer_or_none(critique, source, answer):
    """Issue 33: one rule for "is there an answer?" — the self-critique's when the debate gives
    none (the reason recorded), else none (`answered` False: exit 3 in ask, 502 in serve)."""
    def respond(request):
        return json.dumps(critique) if critique is not None else "not json"

    result = Pipeline(make_router(), ScriptedChat(respond), EmptyDebate(),
                      policy=FixedThreshold(1.0)).answer(MCQ)
    assert (result.source, result.answer, result.answered) == (source, answer, source != "none")
    assert result.error == "the debate gave no answer (empty: no_answer)"
    assert result.debate is not None and result.values()["debate_answer"] is None


def test_batch_keeps_order(tmp_path):
    questions = [Question(f"Which is an opioid? ({i})", TaskType.MULTIPLE_CHOICE,
                          MCQ.choices, id=f"q{i}") for i in range(5)]
    results = small_pipeline(ScriptedChat(scripted), tau=0.0).answer_batch(questions, max_concurrency=3)
    assert [r.question.id for r in results] == [q.id for q in questions]


def test_bad_settings():
    with pytest.raises(ConfigError, match="tau"):
        Pipeline(make_router(), ScriptedChat(scripted), "acemad", policy=FixedThreshold(1.5))
    with pytest.raises(ConfigError, match="unknown debate back-end"):
        Pipeline(make_router(), ScriptedChat(scripted), "shouting")


@pytest.mark.llm
@pytest.mark.parametrize(("tau", "escalated"), [
    (0.0, False),
    pytest.param(1.0, True, marks=pytest.mark.long_e2e),  # a real debate: half a minute and more
])
def test_real_embedded_model_end_to_end(embedded_model, fixture_data_dir, tau, escalated):
    question = load_questions("medqa", data_dir=fixture_data_dir, limit=1)[0]
    pipeline = Pipeline(make_router(), embedded_model, "svrmad", policy=FixedThreshold(tau),
                        backend_options={"n_agents": 3, "consensus_agree": 3, "max_debates": 2})
    result = pipeline.answer(question)
    assert result.escalated is escalated
    assert result.answer in ("", *question.option_letters)
    assert result.prompt_tokens > 100 and result.completion_tokens > 0
    check_totals(result)
    if escalated:
        assert result.debate is not None and result.debate.n_calls >= 1


def test_budget_decides_with_its_tau_after_warm_up_and_counts_unparsed():
    def sometimes_garbage(request):
        critique = "critique" in (request.json_schema or {}).get("properties", {})
        if critique and "#5" in request.messages[-1].text:
            return "not json"
        return scripted(request)

    router = make_router()
    budget = new_budget(0.5, 8, checkpoint_policy(router.config).rule)
    pipeline = Pipeline(router, ScriptedChat(sometimes_garbage), "svrmad",
                        backend_options={"n_agents": 3, "consensus_agree": 3}, policy=budget)
    questions = [Question(f"Which drug is an opioid? #{i}", TaskType.MULTIPLE_CHOICE, MCQ.choices,
                          id=f"q{i}") for i in range(7)]
    decisions = [pipeline.answer(q).decision for q in questions]
    # min(50, window // 2) = 4 scores of warm-up at the router's τ 0.7, then the budget's quantile.
    assert [d.tau_source for d in decisions] == ["checkpoint"] * 3 + ["budget"] * 4
    assert all(d.tau == 0.7 for d in decisions[:3])
    assert decisions[5].parse_status == "unparsed" and decisions[5].escalate
    assert pipeline.policy.rule is budget
    stats = budget.stats()
    assert (stats.observed_total, stats.answers_in_window, stats.unparsed_in_window) == (7, 7, 1)
    assert stats.realized_rate == sum(d.escalate for d in decisions) / 7


def test_tau_override_is_recorded_as_request():
    result = small_pipeline(ScriptedChat(scripted), tau=0.0).answer(MCQ)
    assert (result.decision.tau, result.decision.tau_source) == (0.0, "request")
    assert small_pipeline(ScriptedChat(scripted), tau=None).answer(MCQ).decision.tau_source == "checkpoint"


@pytest.mark.parametrize(("options", "field"), [
    ({"policy": 0.5}, "policy"),
    ({"policy": TriggerBudget}, "policy"),
    ({"policy": Policy(FixedThreshold(0.5), ood_policy="escalate")}, "ood_policy"),
])
def test_bad_policy_settings_name_the_argument(options, field):
    # the test router has no OOD statistics, so it cannot follow "escalate"
    with pytest.raises(ConfigError) as caught:
        Pipeline(make_router(), ScriptedChat(scripted), "svrmad", **options)
    assert caught.value.field == field


def test_the_router_is_shared_not_copied_and_a_budget_is_the_rule():
    router, budget = make_router(), TriggerBudget(0.3, window=10, min_observations=2)
    pipelines = [Pipeline(router, ScriptedChat(scripted), "svrmad", policy=rule,
                          backend_options={"n_agents": 3, "consensus_agree": 3})
                 for rule in (None, FixedThreshold(0.1), budget, Policy(budget, ood_policy="flag"))]
    assert all(pipeline.router is router for pipeline in pipelines)
    assert [type(p.policy.rule).__name__ for p in pipelines] == ["FixedThreshold", "FixedThreshold",
                                                                "TriggerBudget", "TriggerBudget"]
    assert pipelines[0].policy.rule == FixedThreshold(0.7, source="checkpoint",
                                                       method=router.config.threshold.method)
    assert pipelines[2].policy.rule is budget and pipelines[3].policy.rule is budget


def test_a_scorer_scores_parsed_answers_and_the_router_the_unparsed_ones():
    """The server's batcher is such a scorer: the pipeline hands it parsed answers only."""
    router = make_router()
    seen = []

    def scorer(question, response):
        seen.append((question.id, response.final_answer))
        return router.score(question, response)

    pipeline = Pipeline(router, ScriptedChat(scripted), "svrmad", policy=FixedThreshold(0.0), scorer=scorer)
    kept = pipeline.answer(MCQ)
    assert seen == [("q1", "D")] and kept.decision == Pipeline(router, ScriptedChat(scripted), "svrmad",
                                                               policy=FixedThreshold(0.0)).answer(MCQ).decision
    garbled = Pipeline(router, ScriptedChat(lambda request: "not json"), "svrmad",
                       policy=FixedThreshold(0.0), scorer=scorer).answer(MCQ)
    assert len(seen) == 1 and garbled.decision.parse_status == "unparsed"
