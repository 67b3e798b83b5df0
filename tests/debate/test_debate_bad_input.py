"""Bad input never hangs: a typed error or a flagged fallback, for every back-end."""

from __future__ import annotations

import json

import pytest

from imad.debate import BACKENDS, create_backend
from imad.errors import ConfigError, DebateError, InvalidQuestionError, LLMServerError, TruncatedResponseError
from imad.llm.scripted import ScriptedChat
from imad.llm.types import ChatResponse
from imad.question import Question, TaskType
from tests.debate.helpers import MCQ, opening, queued_chat

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_garbage_replies_give_a_flagged_result(name):
    chat = ScriptedChat(lambda request: "lorem ipsum {not json")
    result = create_backend(name, chat).run(MCQ)
    assert result.final_answer == ""
    assert any(f.startswith(("no_answer", "unparseable_answer", "belief_fallback",
                             "judge_fallback")) for f in result.flags), result.flags
    assert result.prompt_tokens > 0 and result.n_calls == len(chat.calls)


def test_acemad_garbage_beliefs_fall_back_to_one_hot_and_uniform():
    replies = {"agent_0": [{"argument": "x", "answer": "B", "self_belief": "high",
                            "peer_prediction": {"A": -5}}],
               "agent_1": ["I think the answer: C"],
               "agent_2": ["???"]}
    result = create_backend("acemad", queued_chat(replies), n_agents=3, n_rounds=1,
                            belief_source="json").run(MCQ)
    beliefs = result.details["rounds"][0]["beliefs"]
    assert beliefs["agent_0"] == [0.0, 1.0, 0.0, 0.0]
    assert beliefs["agent_1"] == [0.0, 0.0, 1.0, 0.0]  # answer parsed from plain text
    assert beliefs["agent_2"] == [0.25] * 4
    assert {"belief_fallback_one_hot:agent_0:r0", "belief_fallback_one_hot:agent_1:r0",
            "belief_fallback_uniform:agent_2:r0",
            "peer_prediction_fallback_uniform:agent_0:r0"} <= set(result.flags)
    assert result.final_answer in ("B", "C")


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_model_that_always_fails_raises_debate_error(name):
    def respond(request):
        raise LLMServerError("HTTP 503 after 3 retries")

    with pytest.raises(DebateError, match="failed"):
        create_backend(name, ScriptedChat(respond)).run(MCQ)


def test_a_failure_mid_debate_is_flagged_and_the_debate_finishes():
    replies = {"agent_0": [opening("A"), LLMServerError("boom")],
               "agent_1": [opening("D"), opening("D")],
               "agent_2": [opening("D"), opening("D")]}
    result = create_backend("mad", queued_chat(replies), n_agents=3, n_rounds=2).run(MCQ)
    assert "call_failed:agent_0:r1:LLMServerError" in result.flags
    assert result.rounds[-1]["agent_0"] == "A"  # kept its previous answer
    assert result.final_answer == "D"
    failed = [c for c in result.trace if c.error]
    assert len(failed) == 1 and failed[0].prompt_tokens == 0 and "boom" in failed[0].error


def test_acemad_round_failing_entirely_stops_with_the_last_beliefs():
    def belief(answer):
        return {"argument": "x", "answer": answer, "self_belief": {answer: 100},
                "peer_prediction": {answer: 100}}

    error = LLMServerError("down")
    replies = {"agent_0": [belief("A"), error], "agent_1": [belief("D"), error],
               "agent_2": [belief("D"), error]}
    result = create_backend("acemad", queued_chat(replies), n_agents=3, n_rounds=3,
                            belief_source="json").run(MCQ)
    assert result.stop_reason == "calls_failed" and result.final_answer == "D"
    assert len(result.rounds) == 1


def test_acemad_agent_failing_mid_debate_keeps_its_last_turn():
    def belief(answer):
        return {"argument": "x", "answer": answer, "self_belief": {answer: 100},
                "peer_prediction": {"A": 25, "B": 25, "C": 25, "D": 25}}

    replies = {"agent_0": [belief("A"), LLMServerError("down")],
               "agent_1": [belief("D"), belief("D")], "agent_2": [belief("D"), belief("D")]}
    result = create_backend("acemad", queued_chat(replies), n_agents=3, n_rounds=2,
                            belief_source="json").run(MCQ)
    assert "call_failed:agent_0:r1:LLMServerError" in result.flags
    last = result.details["rounds"][1]
    assert last["beliefs"]["agent_0"] == [1.0, 0.0, 0.0, 0.0] and last["scores"]["agent_0"] is None
    assert result.rounds[1]["agent_0"] == "A" and result.final_answer == "D"


def test_svrmad_debate_failure_is_no_evidence():
    replies = {f"agent_{i}": [opening("A" if i < 3 else "B", 90 - i)] for i in range(6)}
    replies["agent_0"].append(LLMServerError("flaky"))
    replies["agent_3"].append({"argument": "fine", "answer": "B"})
    result = create_backend("svrmad", queued_chat(replies), max_debates=1,
                            prior_source="verbal").run(MCQ)
    assert result.details["kept"]["agent_0"] == 0 and result.details["changed"]["agent_0"] == 0
    assert result.details["kept"]["agent_3"] == 1
    assert "no_evidence:agent_0:r1" in result.flags
    assert result.stop_reason in ("accepted", "budget_exhausted")


def test_truncated_reply_keeps_its_tokens_and_is_flagged():
    def respond(request):
        partial = '{"argument": "Morphine is an opioid agonist", "answer": "D", "confid'
        raise TruncatedResponseError(ChatResponse(partial, "scripted", 40, 16, "length", 0.0))

    result = create_backend("cot", ScriptedChat(respond)).run(MCQ)
    assert "truncated:agent_0:r0" in result.flags
    assert (result.prompt_tokens, result.completion_tokens) == (40, 16)
    assert result.final_answer == "D"  # the partial text still names the answer


def test_unusable_inputs_raise_typed_errors():
    chat = ScriptedChat(lambda request: json.dumps(opening("A")))
    with pytest.raises(DebateError, match="imad.Question"):
        create_backend("acemad", chat).run("Which drug is an opioid?")  # type: ignore[arg-type]
    with pytest.raises(DebateError, match="CritiqueResponse"):
        create_backend("svrmad", chat).run(MCQ, seed_response={"final_answer": "A"})
    with pytest.raises(InvalidQuestionError):
        Question("Pick one", TaskType.MULTIPLE_CHOICE, ())  # an empty option list
    with pytest.raises(ConfigError) as error:
        create_backend("cot", "local")  # a spec string, not a model
    assert error.value.field == "model"


def test_a_model_returning_the_wrong_number_of_replies_is_a_debate_error():
    class Broken(ScriptedChat):
        def chat_batch(self, requests):
            return []

    with pytest.raises(DebateError, match="0 replies to 3 requests"):
        create_backend("self_consistency", Broken(lambda r: ""), n_samples=3).run(MCQ)
