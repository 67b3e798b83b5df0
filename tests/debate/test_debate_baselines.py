"""The baselines on the same interface: CoT, self-consistency, all-to-all MAD, Liang, DOWN."""

from __future__ import annotations

import math

import pytest

from imad.critique.schema import CritiqueResponse
from imad.debate import BACKENDS, DOWNConfig, MADConfig, create_backend, make_config
from imad.errors import ConfigError
from imad.llm.types import TokenLogprob
from tests.debate.helpers import MCQ, opening, queued_chat, words_sent

SEED = CritiqueResponse("D", "Morphine is the opioid.", "Maybe C.", "C", "D", 0.95, 0.1)


def test_registry_names_and_defaults():
    assert set(BACKENDS) == {"acemad", "svrmad", "cot", "self_consistency", "mad", "liang", "down"}
    acemad = make_config("acemad")
    assert (acemad.n_agents, acemad.n_rounds, acemad.eta, acemad.gamma) == (5, 3, 1.0, 1.0)
    svrmad = make_config("svrmad")
    assert (svrmad.n_agents, svrmad.consensus_agree, svrmad.n_challengers, svrmad.kappa,
            svrmad.accept_threshold, svrmad.score_rule) == (6, 5, 2, 2.0, 0.75, "beta")
    assert make_config("down").theta == 0.8
    # A constrained reply (argument + ≤ ~100 tokens of JSON) always fits the default budget.
    for name in BACKENDS:
        config = make_config(name)
        assert config.max_tokens >= config.argument_chars + 100, name
    with pytest.raises(ConfigError, match="unknown debate back-end"):
        make_config("parliament")
    with pytest.raises(ConfigError) as error:
        make_config("mad", n_agentz=3)
    assert error.value.field == "MADConfig.n_agentz"
    with pytest.raises(ConfigError, match="takes a MADConfig"):
        create_backend("mad", queued_chat({}), make_config("cot"))


def test_cot_is_one_call_and_a_seed_costs_nothing():
    chat = queued_chat({"agent_0": [opening("D", 80)]})
    result = create_backend("cot", chat).run(MCQ)
    assert (result.final_answer, result.n_calls, result.stop_reason) == ("D", 1, "single_call")
    assert chat.calls[0].temperature == 0.0
    seeded = create_backend("cot", queued_chat({})).run(MCQ, seed_response=SEED)
    assert (seeded.final_answer, seeded.n_calls, seeded.total_tokens) == ("D", 0, 0)


def test_self_consistency_votes_with_ties_to_the_earliest_sample():
    replies = {f"agent_{i}": [opening(a)] for i, a in enumerate("CDDCA")}
    result = create_backend("self_consistency", queued_chat(replies)).run(MCQ)
    assert result.final_answer == "C"  # C and D have 2 each; C was sampled first
    chat = queued_chat({f"agent_{i}": [opening("B")] for i in range(1, 3)})
    seeded = create_backend("self_consistency", chat, n_samples=3).run(MCQ, seed_response=SEED)
    assert seeded.final_answer == "B" and seeded.n_calls == 2
    assert len({c.seed for c in chat.calls}) == 2  # every sample has its own seed


def test_all_to_all_mad_messages_and_final_vote():
    replies = {"agent_0": [opening("A"), opening("D"), opening("D")],
               "agent_1": [opening("D"), opening("D"), opening("D")],
               "agent_2": [opening("B"), opening("B"), opening("A")],
               "agent_3": [opening("C"), opening("A"), opening("A")]}
    chat = queued_chat(replies)
    result = create_backend("mad", chat, MADConfig(n_agents=4, n_rounds=3)).run(MCQ)
    assert result.messages == 4 * 3 * 2  # N(N−1)(R−1)
    assert result.rounds[-1] == {"agent_0": "D", "agent_1": "D", "agent_2": "A", "agent_3": "A"}
    # 2-2 tie in the last round: the earlier rounds' answers break it (D 3 times, A 2 times).
    assert result.final_answer == "D"
    second_round = chat.calls[4].messages[-1].text
    assert "[agent_1] answer D" in second_round and "Your last answer: A." in second_round
    assert result.prompt_tokens == words_sent(chat)


def test_liang_stops_when_the_judge_decides():
    judge = {"reasoning": "D binds opioid receptors", "decided": True, "answer": "D"}
    chat = queued_chat({"affirmative": [opening("D")], "negative": [opening("C")],
                        "judge": [judge]})
    result = create_backend("liang", chat).run(MCQ)
    assert (result.final_answer, result.stop_reason, result.n_calls) == ("D", "judge_decided", 3)
    # The negative must argue for another answer: D is not in its schema's enum.
    negative_schema = chat.calls[1].json_schema["properties"]["answer"]
    assert negative_schema["enum"] == ["A", "B", "C"]
    assert result.messages == 1 + 2


def test_liang_runs_all_rounds_and_falls_back_to_the_affirmative():
    undecided = {"reasoning": "unclear", "decided": False, "answer": "C"}
    chat = queued_chat({"affirmative": [opening("D"), opening("D")],
                        "negative": [opening("C"), opening("B")],
                        "judge": [undecided, "garbage"]})
    result = create_backend("liang", chat, max_rounds=2).run(MCQ)
    assert result.stop_reason == "rounds_done"
    assert result.final_answer == "D" and "judge_fallback_affirmative" in result.flags
    assert result.rounds == ({"affirmative": "D", "negative": "C", "judge": "C"},
                             {"affirmative": "D", "negative": "B", "judge": ""})


def test_down_keeps_a_confident_answer():
    chat = queued_chat({"agent_0": [opening("D", 95)]})
    result = create_backend("down", chat, confidence_source="verbal").run(MCQ)
    assert (result.final_answer, result.stop_reason, result.n_calls) == ("D", "confident", 1)


def test_down_debates_an_unsure_answer_reusing_it_as_agent_zero():
    replies = {"agent_0": [opening("A", 40), opening("D")],
               "agent_1": [opening("D"), opening("D")], "agent_2": [opening("D"), opening("D")]}
    chat = queued_chat(replies)
    result = create_backend("down", chat, DOWNConfig(confidence_source="verbal")).run(MCQ)
    assert result.stop_reason == "debated:rounds_done" and result.final_answer == "D"
    assert result.n_calls == 1 + 2 + 3  # the opening is paid once
    assert result.prompt_tokens == words_sent(chat)
    assert result.details["confidence"] == 0.4


def test_down_uses_the_answer_token_probability_when_logprobs_exist():
    def reply(request):
        tokens = ['{"argument":"x","answer":"', 'D', '","confidence":99}']
        top = {"D": math.log(0.6), "C": math.log(0.3), "A": math.log(0.1)}
        return "".join(tokens), (TokenLogprob(tokens[0], -0.1), TokenLogprob("D", top["D"], top),
                                 TokenLogprob(tokens[2], -0.1))

    replies = {"agent_0": [reply, opening("D")], "agent_1": [opening("D"), opening("D")],
               "agent_2": [opening("D"), opening("D")]}
    chat = queued_chat(replies, supports_logprobs=True)
    result = create_backend("down", chat).run(MCQ)
    assert result.details["confidence_source"] == "answer_prob"
    assert result.details["confidence"] == pytest.approx(0.6)  # ≤ θ: debate despite "99"
    assert result.stop_reason.startswith("debated")


def test_down_config_checks_its_inner_backend():
    with pytest.raises(ConfigError) as error:
        DOWNConfig(debate_backend="down")
    assert error.value.field == "DOWNConfig.debate_backend"
    with pytest.raises(ConfigError) as error:
        DOWNConfig(debate_backend="acemad", debate_config=MADConfig())
    assert error.value.field == "DOWNConfig.debate_config"
    inner = make_config("acemad", n_agents=3)
    assert DOWNConfig(debate_backend="acemad", debate_config=inner).debate_config is inner


def test_every_backend_result_serialises_with_totals_from_its_trace():
    def reply(request):
        properties = request.json_schema["properties"]
        data = {"argument": "x", "reasoning": "x", "answer": "D", "others_answer": "D",
                "confidence": 50, "decided": True,
                "self_belief": {"A": 10, "B": 10, "C": 10, "D": 70},
                "peer_prediction": {"A": 10, "B": 10, "C": 10, "D": 70}}
        return str({k: data[k] for k in properties}).replace("'", '"').replace("True", "true")

    from imad.llm.scripted import ScriptedChat

    for name in BACKENDS:
        chat = ScriptedChat(reply)
        result = create_backend(name, chat).run(MCQ)
        data = result.to_dict()
        assert result.final_answer == "D", name
        assert data["prompt_tokens"] == sum(c["prompt_tokens"] for c in data["trace"]) > 0
        assert data["completion_tokens"] == sum(c["completion_tokens"] for c in data["trace"]) > 0
        assert data["messages"] == sum(c["messages_in"] for c in data["trace"])
        assert result.prompt_tokens == words_sent(chat), name
        assert len(chat.calls) == result.n_calls, name
