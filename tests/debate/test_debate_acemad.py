"""AceMAD protocol arithmetic against hand-computed values (SPEC §8)."""

from __future__ import annotations

import math

import pytest

from imad.critique.schema import CritiqueResponse
from imad.debate import AceMADConfig, create_backend
from imad.debate.acemad import propose_candidates
from imad.debate.beliefs import uniform
from imad.debate.peer_prediction import (
    aggregate,
    choose,
    peer_prediction_scores,
    update_weights,
)
from imad.errors import ConfigError, DebateError
from imad.llm.types import TokenLogprob
from imad.question import Question, TaskType
from tests.debate.helpers import BINARY, MCQ, queued_chat, words_sent

# Three agents, two rounds, options A/B. Beliefs and peer predictions in percent.
ROUND_0 = {"agent_0": ((80, 20), (30, 70)), "agent_1": ((10, 90), (20, 80)),
           "agent_2": ((30, 70), (50, 50))}
ROUND_1 = {"agent_0": ((55, 45), (40, 60)), "agent_1": ((5, 95), (60, 40)),
           "agent_2": ((55, 45), (50, 50))}
# Hand computation. Round 0: Q̄₋₀ = mean(p1, p2) = (.2, .8) → S0 = 1 − (.1² + .1²) = .98;
# Q̄₋₁ = (.55, .45) → S1 = 1 − (.35² + .35²) = .755; Q̄₋₂ = (.45, .55) → S2 = 1 − 2·.05² = .995.
# Round 1: Q̄₋₀ = (.3, .7) → S0 = .98; Q̄₋₁ = (.55, .45) → S1 = .995; Q̄₋₂ = (.3, .7) → S2 = .92.
SCORES_0 = (0.98, 0.755, 0.995)
SCORES_1 = (0.98, 0.995, 0.92)
# w_i ∝ exp(S_i⁰ + S_i¹) from uniform weights with η = 1.
RAISED = [math.exp(0.98 + 0.98), math.exp(0.755 + 0.995), math.exp(0.995 + 0.92)]
WEIGHTS = tuple(w / sum(RAISED) for w in RAISED)  # ≈ (0.36146, 0.29299, 0.34555)


def _reply(answer: str, belief: tuple[int, int], prediction: tuple[int, int]) -> dict:
    return {"argument": f"I pick {answer}", "answer": answer,
            "self_belief": dict(zip("AB", belief, strict=True)),
            "peer_prediction": dict(zip("AB", prediction, strict=True))}


def _chat():
    replies = {}
    for agent in ROUND_0:
        replies[agent] = [
            _reply("A" if ROUND_0[agent][0][0] > 50 else "B", *ROUND_0[agent]),
            _reply("A" if ROUND_1[agent][0][0] > 50 else "B", *ROUND_1[agent]),
        ]
    return queued_chat(replies)


def _run(**config):
    chat = _chat()
    config = AceMADConfig(n_agents=3, n_rounds=2, belief_source="json", **config)
    return create_backend("acemad", chat, config).run(BINARY), chat


def test_scores_weights_and_soft_aggregate_match_hand_computation():
    result, _ = _run()
    rounds = result.details["rounds"]
    assert [rounds[0]["scores"][a] for a in ROUND_0] == pytest.approx(SCORES_0)
    assert [rounds[1]["scores"][a] for a in ROUND_0] == pytest.approx(SCORES_1)
    assert list(result.details["weights"].values()) == pytest.approx(WEIGHTS)
    # Soft, γ = 1: Σ w_i p_i(A) = .36146·.55 + .29299·.05 + .34555·.55 ≈ .40350 → B wins.
    support_a = WEIGHTS[0] * 0.55 + WEIGHTS[1] * 0.05 + WEIGHTS[2] * 0.55
    assert result.details["support"]["A"] == pytest.approx(support_a)
    assert result.details["support"]["A"] == pytest.approx(0.40350, abs=1e-5)
    assert result.final_answer == "B"
    assert result.rounds == ({"agent_0": "A", "agent_1": "B", "agent_2": "B"},
                             {"agent_0": "A", "agent_1": "B", "agent_2": "A"})
    assert result.stop_reason == "rounds_done" and result.flags == ()


def test_hard_vote_and_gamma_variants():
    hard, _ = _run(aggregation="hard")
    # Hard: A gets w0 + w2 ≈ .70701, B gets w1 ≈ .29299.
    assert hard.details["support"]["A"] == pytest.approx(WEIGHTS[0] + WEIGHTS[2])
    assert hard.final_answer == "A"
    squared, _ = _run(gamma=2.0)
    # γ = 2: A = Σ w_i² p_i(A) ≈ .14182, B ≈ .19408.
    assert squared.details["support"]["A"] == pytest.approx(0.14182, abs=1e-5)
    assert squared.details["support"]["B"] == pytest.approx(0.19408, abs=1e-5)
    assert squared.final_answer == "B"


def test_eta_zero_keeps_uniform_weights_and_is_the_plain_vote():
    result, _ = _run(eta=0.0, aggregation="hard")
    assert list(result.details["weights"].values()) == pytest.approx([1 / 3] * 3)
    assert result.final_answer == "A"  # 2 of 3 agents answer A in the last round


def test_tokens_and_messages_are_sums_over_the_trace():
    result, chat = _run()
    assert result.n_calls == 6 == len(chat.calls)
    assert result.prompt_tokens == sum(c.prompt_tokens for c in result.trace) == words_sent(chat)
    assert result.completion_tokens == sum(c.completion_tokens for c in result.trace) > 0
    assert result.total_tokens == result.prompt_tokens + result.completion_tokens
    # Round 1: each of the 3 agents reads its 2 peers.
    assert result.messages == 6 == sum(c.messages_in for c in result.trace)
    assert [c.round for c in result.trace] == [0, 0, 0, 1, 1, 1]


def test_round_one_prompts_show_peers_with_influence_but_not_this_round():
    _, chat = _run()
    first_round = chat.calls[0].messages[-1].text
    assert "influence" not in first_round and "agent_1" not in first_round
    later = chat.calls[3].messages[-1].text
    assert "[agent_1, influence 0.28] answer B" in later  # weight after round 0: ≈ .2838
    assert "[agent_0," not in later  # the agent's own line is not a peer line


def test_pure_functions_agree_with_the_formulas():
    beliefs = [(0.8, 0.2), (0.1, 0.9), (0.3, 0.7)]
    predictions = [(0.3, 0.7), (0.2, 0.8), None]
    scores = peer_prediction_scores(beliefs, predictions)
    assert scores[:2] == pytest.approx([0.98, 0.755]) and scores[2] is None
    # A missing prediction scores the round's mean: neutral, not penalised.
    weights = update_weights(uniform(3), scores, eta=1.0)
    neutral = (0.98 + 0.755) / 2
    raised = [math.exp(0.98), math.exp(0.755), math.exp(neutral)]
    assert weights == pytest.approx([r / sum(raised) for r in raised])
    assert aggregate((0.5, 0.5), [(1.0, 0.0), (0.0, 1.0)], 1.0) == (0.5, 0.5)
    assert choose((0.5, 0.5), preference=[1, 0]) == 1  # ties go to the first agent's answer
    assert aggregate((0.7, 0.3), [(0.2, 0.8), (0.9, 0.1)], 1.0, answers=[1, None]) == (0.0, 0.7)
    assert propose_candidates(["7", "", "5", "7", "5", "9"], 2) == ("7", "5")


def test_seed_response_stands_in_for_agent_zero_round_zero():
    seed = CritiqueResponse("A", "Yes, by Rayleigh scattering.", "", "B", "A", 0.9, 0.2)
    replies = {"agent_0": [_reply("A", (60, 40), (50, 50))],
               "agent_1": [_reply("B", (10, 90), (20, 80)), _reply("B", (10, 90), (20, 80))],
               "agent_2": [_reply("B", (30, 70), (50, 50)), _reply("A", (60, 40), (50, 50))]}
    chat = queued_chat(replies)
    config = AceMADConfig(n_agents=3, n_rounds=2, belief_source="json")
    result = create_backend("acemad", chat, config).run(BINARY, seed_response=seed)
    assert len(chat.calls) == 5  # agent_0 paid nothing in round 0
    assert "seed_opening:agent_0" in result.flags
    round_0 = result.details["rounds"][0]
    assert round_0["beliefs"]["agent_0"] == pytest.approx([0.9, 0.1])
    assert round_0["predictions"]["agent_0"] is None
    assert round_0["scores"]["agent_0"] is None
    # The seed's argument reaches the peers in round 1.
    assert "Rayleigh scattering" in chat.calls[3].messages[-1].text


def test_logprob_beliefs_are_read_at_the_answer_tokens():
    def reply(request):
        tokens = ['{"', 'argument', '":"', 'x', '","', 'answer', '":"', 'B', '","',
                  'others', '_answer', '":"', 'A', '"}']
        top_at_answer = {"A": math.log(0.2), "B": math.log(0.6), "C": math.log(0.1), "?": -1.0}
        top_at_others = {"A": math.log(0.5), "B": math.log(0.5)}
        logprobs = []
        for i, token in enumerate(tokens):
            top = top_at_answer if i == 7 else top_at_others if i == 12 else {}
            logprobs.append(TokenLogprob(token, top.get(token, -0.01), top))
        return "".join(tokens), tuple(logprobs)

    chat = queued_chat({f"agent_{i}": [reply] for i in range(3)}, supports_logprobs=True)
    result = create_backend("acemad", chat, n_agents=3, n_rounds=1).run(MCQ)
    assert result.details["belief_source"] == "logprobs"
    assert chat.calls[0].logprobs and chat.calls[0].top_logprobs == 10
    belief = result.details["rounds"][0]["beliefs"]["agent_0"]
    assert belief == pytest.approx([0.2 / 0.9, 0.6 / 0.9, 0.1 / 0.9, 0.0])
    prediction = result.details["rounds"][0]["predictions"]["agent_0"]
    assert prediction == pytest.approx([0.5, 0.5, 0.0, 0.0])
    assert result.final_answer == "B" and result.flags == ()


def test_open_question_debates_over_the_proposed_answers():
    numeric = Question("How many legs do 3 spiders have?", TaskType.NUMERIC, id="open")

    def belief_reply(answer, belief):
        return {"argument": "count", "answer": answer, "self_belief": belief,
                "peer_prediction": {"A": 50, "B": 50}}

    replies = {
        "agent_0": [{"argument": "8 each", "answer": "24", "confidence": 90},
                    belief_reply("A", {"A": 90, "B": 10})],
        "agent_1": [{"argument": "6 each", "answer": "18", "confidence": 60},
                    belief_reply("A", {"A": 70, "B": 30})],
        "agent_2": [{"argument": "8 legs", "answer": "24.0", "confidence": 80},
                    belief_reply("B", {"A": 20, "B": 80})],
    }
    chat = queued_chat(replies)
    result = create_backend("acemad", chat, n_agents=3, n_rounds=1, belief_source="json").run(numeric)
    assert result.details["options"] == ["24", "18"]  # most proposed first
    assert "A. 24" in chat.calls[3].messages[-1].text and "B. 18" in chat.calls[3].messages[-1].text
    assert result.rounds[0] == {"agent_0": "24", "agent_1": "18", "agent_2": "24"}
    assert result.rounds[1] == {"agent_0": "24", "agent_1": "24", "agent_2": "18"}
    assert result.final_answer == "24"
    assert [c.role for c in result.trace] == ["propose"] * 3 + ["argue"] * 3


def test_open_question_with_one_proposal_is_a_consensus():
    numeric = Question("2 + 2?", TaskType.NUMERIC)
    chat = queued_chat({f"agent_{i}": [{"argument": "sum", "answer": "4", "confidence": 99}]
                        for i in range(3)})
    result = create_backend("acemad", chat, n_agents=3).run(numeric)
    assert (result.final_answer, result.stop_reason, result.n_calls) == ("4", "consensus", 3)


def test_open_question_without_any_answer_raises():
    numeric = Question("2 + 2?", TaskType.NUMERIC)
    chat = queued_chat({f"agent_{i}": ["no idea"] for i in range(3)})
    with pytest.raises(DebateError, match="no agent proposed"):
        create_backend("acemad", chat, n_agents=3).run(numeric)


@pytest.mark.parametrize(("field", "value"), [("n_agents", 1), ("n_rounds", 0), ("eta", -1.0),
                                              ("gamma", 0.0), ("aggregation", "median"),
                                              ("belief_source", "vibes"), ("top_logprobs", 0),
                                              ("temperature", 3.0), ("max_tokens", 2)])
def test_config_errors_name_the_field(field, value):
    with pytest.raises(ConfigError) as error:
        AceMADConfig(**{field: value})
    assert error.value.field == f"AceMADConfig.{field}"
