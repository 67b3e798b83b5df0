"""SVR-MAD against a worked example: receiver/challenger choice, SVR, early stop, fallback."""

from __future__ import annotations

import math

import pytest

from imad.critique.schema import CritiqueResponse
from imad.debate import SVRMADConfig, create_backend, make_config
from imad.debate.svrmad import (
    accepted_agent,
    pair_key,
    posterior_score,
    select_debates,
    survival_rate,
)
from imad.errors import ConfigError
from imad.llm.types import TokenLogprob
from tests.debate.helpers import MCQ, opening, queued_chat, words_sent

# Six agents: answers and verbal confidences (the priors). Pre-debate votes: A 3, B 2, C 1.
OPENINGS = {"agent_0": opening("A", 90, "A0 reason"), "agent_1": opening("A", 85),
            "agent_2": opening("B", 70, "B2 reason"), "agent_3": opening("C", 60),
            "agent_4": opening("B", 50), "agent_5": opening("A", 40)}


def _debate(answer: str) -> dict:
    return {"argument": f"now {answer}", "answer": answer}


def _chat(debates: dict[str, list[str]]):
    return queued_chat({agent: [reply, *(_debate(a) for a in debates.get(agent, []))]
                        for agent, reply in OPENINGS.items()})


def test_worked_example_with_budget_exhausted_and_tie_broken_by_pre_debate_answers():
    # Iteration 1: receiver agent_0 (π .9); challengers = best two with another answer:
    #   agent_2 (B, .7), agent_3 (C, .6).
    #   Debate 1, 0↔2: both keep.        agent_0: r=1 → (2·.9+1)/3 = .9333; agent_2: (1.4+1)/3 = .8
    #   Debate 2, 0↔3: 0 changes to C, 3 keeps.  agent_0: r=1,c=1 → (1.8+1)/4 = .7;
    #                                           agent_3: (1.2+1)/3 = .7333. Receiver changed: re-pick.
    # Iteration 2: receiver agent_1 (A, .85); challengers agent_2 (B, .8), agent_3 (C, .7333).
    #   Debate 3, 1↔2: 1 changes to B, 2 changes to A. agent_1: (1.7+0)/3 = .5667;
    #                                                 agent_2: r=1,c=1 → (1.4+1)/4 = .6.
    # Budget (3 debates) spent: post-debate answers C,B,A,C,B,A tie 2-2-2 → pre-debate A wins.
    chat = _chat({"agent_0": ["A", "C"], "agent_2": ["B", "A"], "agent_3": ["C"], "agent_1": ["B"]})
    config = SVRMADConfig(accept_threshold=0.95, max_debates=3, prior_source="verbal")
    result = create_backend("svrmad", chat, config).run(MCQ)
    debates = [(c.round, c.agent) for c in result.trace if c.role == "debate"]
    assert debates == [(1, "agent_0"), (1, "agent_2"), (2, "agent_0"), (2, "agent_3"),
                       (3, "agent_1"), (3, "agent_2")]
    scores = result.details["scores"]
    assert [scores[f"agent_{i}"] for i in range(6)] == pytest.approx(
        [0.7, 1.7 / 3, 0.6, 2.2 / 3, 0.5, 0.4])
    assert result.details["svr"] == {"agent_0": 0.0, "agent_1": -1.0, "agent_2": 0.0,
                                     "agent_3": 1.0, "agent_4": None, "agent_5": None}
    assert result.rounds[-1] == {"agent_0": "C", "agent_1": "B", "agent_2": "A", "agent_3": "C",
                                 "agent_4": "B", "agent_5": "A"}
    assert result.stop_reason == "budget_exhausted" and "fallback_vote" in result.flags
    assert result.final_answer == "A"
    assert result.details["debates"] == 3
    assert result.messages == 6 and result.n_calls == 12
    assert result.prompt_tokens == words_sent(chat)


def test_early_acceptance_at_the_accept_threshold():
    # Debate 1, 0↔2: agent_0 changes to B, agent_2 keeps B → agent_2: (1.4+1)/3 = .8 ≥ .75.
    chat = _chat({"agent_0": ["B"], "agent_2": ["B"]})
    result = create_backend("svrmad", chat, prior_source="verbal").run(MCQ)
    assert result.stop_reason == "accepted" and result.final_answer == "B"
    assert result.details["scores"]["agent_2"] == pytest.approx(0.8)
    assert result.details["scores"]["agent_0"] == pytest.approx(1.8 / 3)
    assert result.n_calls == 8 and result.messages == 2
    prompt = chat.calls[6].messages[-1].text  # agent_0 reads agent_2's argument
    assert "[agent_2] answer B: B2 reason" in prompt and "Your answer: A" in prompt


def test_consensus_stops_before_any_debate():
    replies = {f"agent_{i}": [opening("D", 80)] for i in range(5)}
    replies["agent_5"] = [opening("A", 99)]
    result = create_backend("svrmad", queued_chat(replies)).run(MCQ)
    assert (result.final_answer, result.stop_reason, result.n_calls, result.messages) == (
        "D", "consensus", 6, 0)


def test_a_confident_prior_alone_is_never_accepted():
    # agent_0's prior 1.0 ≥ the threshold, but it has not debated; it must survive a debate first.
    replies = {f"agent_{i}": [opening("A" if i < 3 else "B", 100 if i == 0 else 10)]
               for i in range(6)}
    replies["agent_0"].append(_debate("A"))
    replies["agent_3"].append(_debate("A"))
    result = create_backend("svrmad", queued_chat(replies), prior_source="verbal").run(MCQ)
    assert result.stop_reason == "accepted" and result.details["debates"] == 1


def _logprob_reply(answer: str):
    # The JSON scaffolding a grammar forces gets tiny log-probs; the prior ignores it.
    pieces = [('{"argument":"', -9.0), ("x", -0.1), ('","answer":"', -9.0), (answer, -0.5),
              ('","confidence":50}', -9.0)]

    def reply(request):
        return "".join(p for p, _ in pieces), tuple(TokenLogprob(p, lp) for p, lp in pieces)
    return reply


@pytest.mark.parametrize(("source", "expected"), [
    ("perplexity", math.exp((-0.1 - 0.5) / 2)),
    ("min_logprob", math.exp(-0.5)),
    ("verbal", 0.5),
])
def test_priors_from_logprobs_or_verbal_confidence(source, expected):
    replies = {f"agent_{i}": [_logprob_reply("A" if i < 4 else "B")] for i in range(6)}
    chat = queued_chat(replies, supports_logprobs=True)
    result = create_backend("svrmad", chat, prior_source=source, consensus_agree=4).run(MCQ)
    assert result.details["prior_source"] == source
    assert result.details["priors"]["agent_0"] == pytest.approx(expected)
    assert chat.calls[0].logprobs == (source != "verbal")


def test_auto_prior_is_verbal_without_logprobs_and_seed_stands_in():
    seed = CritiqueResponse("A", "seeded reason", "", "B", "A", 0.65, 0.2)
    replies = {f"agent_{i}": [opening("A", 80)] for i in range(1, 6)}
    result = create_backend("svrmad", queued_chat(replies)).run(MCQ, seed_response=seed)
    assert result.details["prior_source"] == "verbal"
    assert result.details["priors"]["agent_0"] == 0.65
    assert result.n_calls == 5 and "seed_opening:agent_0" in result.flags


def test_pure_functions():
    assert survival_rate(0, 0) is None and survival_rate(3, 1) == 0.5
    for prior, kept, changed in [(0.3, 2, 1), (0.9, 0, 2), (0.5, 4, 0)]:
        debates = kept + changed
        svr = (kept - changed) / debates
        formula = (2 * prior + debates * (svr + 1) / 2) / (2 + debates)
        assert posterior_score(prior, kept, changed, 2.0) == pytest.approx(formula)
    assert posterior_score(0.3, 0, 0, 2.0) == 0.3
    # The score tends to the survival share as D grows.
    assert posterior_score(0.0, 900, 100, 2.0) == pytest.approx(0.9, abs=0.002)
    answers = ["A", "A", "B", "C", ""]
    scores = [0.9, 0.8, 0.7, 0.6, 0.99]
    assert select_debates(scores, answers, 2, set()) == (0, [2, 3])
    debated = {pair_key(0, 2, answers), pair_key(0, 3, answers)}
    assert select_debates(scores, answers, 2, debated) == (1, [2, 3])
    assert accepted_agent([0.8, 0.9], [0, 1], [0, 0], accept_threshold=0.75) == 1
    assert accepted_agent([0.9, 0.7], [0, 1], [0, 0], accept_threshold=0.75) is None


@pytest.mark.parametrize(("fields", "field"), [({"consensus_agree": 7}, "consensus_agree"),
                                               ({"n_challengers": 0}, "n_challengers"),
                                               ({"kappa": 0.0}, "kappa"),
                                               ({"accept_threshold": 1.5}, "accept_threshold"),
                                               ({"accept_threshold": 0.0}, "accept_threshold"),
                                               ({"score_rule": "bayes"}, "score_rule"),
                                               ({"max_debates": -1}, "max_debates"),
                                               ({"prior_source": "gut"}, "prior_source")])
def test_config_errors_name_the_field(fields, field):
    with pytest.raises(ConfigError) as error:
        SVRMADConfig(**fields)
    assert error.value.field == f"SVRMADConfig.{field}"


def test_tau_is_no_longer_an_svrmad_field():
    # Renamed to accept_threshold, to keep it apart from the router's τ.
    with pytest.raises(ConfigError, match="SVRMADConfig.tau: unknown field"):
        make_config("svrmad", tau=0.8)


# --- score_rule="survival": once D > 0 the survival share decides, the prior breaks ties -------


def test_survival_score_arithmetic():
    assert posterior_score(0.4, 0, 0, 2.0, "survival") == 0.4  # no debate yet: the prior
    assert posterior_score(0.4, 1, 0, 2.0, "survival") == 1.0  # (SVR+1)/2 with SVR = 1
    assert posterior_score(0.9, 1, 2, 2.0, "survival") == pytest.approx(1 / 3)
    assert posterior_score(0.0, 2, 2, 8.0, "survival") == 0.5  # κ plays no part
    # Equal scores: the higher prior goes first, for the receiver and for acceptance.
    scores, answers = [1.0, 1.0, 0.5], ["B", "A", "C"]
    assert select_debates(scores, answers, 2, set()) == (0, [1, 2])
    assert select_debates(scores, answers, 2, set(), tie_break=[0.6, 0.9, 0.1]) == (1, [0, 2])
    assert accepted_agent(scores, [1, 1, 1], [0, 0, 1], 0.75) == 0
    assert accepted_agent(scores, [1, 1, 1], [0, 0, 1], 0.75, tie_break=[0.6, 0.9, 0.1]) == 1


# agent_3 (prior .4) survives against agent_0 (prior .9), who changes to B.
LOW_PRIOR_SURVIVES = {"agent_0": opening("A", 90), "agent_1": opening("A", 85),
                      "agent_2": opening("A", 80), "agent_3": opening("B", 40),
                      "agent_4": opening("C", 30), "agent_5": opening("D", 20)}


def _one_debate(rule: str):
    replies = {agent: [reply] for agent, reply in LOW_PRIOR_SURVIVES.items()}
    replies["agent_0"].append(_debate("B"))
    replies["agent_3"].append(_debate("B"))
    config = SVRMADConfig(score_rule=rule, max_debates=1, prior_source="verbal")
    return create_backend("svrmad", queued_chat(replies), config).run(MCQ)


def test_survival_accepts_a_low_prior_agent_that_survived():
    # Receiver agent_0 (.9), first challenger agent_3 (B, .4). agent_0 changes to B, agent_3
    # keeps B: agent_3 scores r/D = 1/1 = 1.0 ≥ .75 and is accepted; agent_0 scores 0/1 = 0.
    result = _one_debate("survival")
    assert (result.stop_reason, result.final_answer) == ("accepted", "B")
    assert result.details["score_rule"] == "survival"
    assert result.details["scores"]["agent_3"] == 1.0 and result.details["scores"]["agent_0"] == 0.0


def test_beta_keeps_weighing_the_prior_on_the_same_debate():
    # The same debate under "beta" (κ = 2): agent_3 (2·.4 + 1)/3 = .6, agent_0 (2·.9 + 0)/3 = .6,
    # both < .75. The budget (1 debate) is spent; post-debate answers B,A,A,B,C,D tie A–B 2–2,
    # and the pre-debate answers (A 3, B 1) break the tie: A.
    result = _one_debate("beta")
    assert (result.stop_reason, result.final_answer) == ("budget_exhausted", "A")
    assert result.details["scores"]["agent_3"] == pytest.approx(0.6)
    assert result.details["scores"]["agent_0"] == pytest.approx(0.6)


def test_survival_ties_are_broken_by_the_prior_not_the_agent_index():
    # Receiver agent_1 (A, .9); first challenger agent_0 (B, .6). Both keep: both score 1.0.
    # The prior breaks the tie: agent_1's A is accepted (by index agent_0's B would win).
    openings = {"agent_0": opening("B", 60), "agent_1": opening("A", 90),
                "agent_2": opening("A", 80), "agent_3": opening("A", 70),
                "agent_4": opening("C", 50), "agent_5": opening("B", 40)}
    replies = {agent: [reply] for agent, reply in openings.items()}
    replies["agent_1"].append(_debate("A"))
    replies["agent_0"].append(_debate("B"))
    result = create_backend("svrmad", queued_chat(replies), score_rule="survival",
                            prior_source="verbal").run(MCQ)
    assert [(c.round, c.agent) for c in result.trace if c.role == "debate"] == [
        (1, "agent_1"), (1, "agent_0")]
    assert result.details["scores"]["agent_0"] == result.details["scores"]["agent_1"] == 1.0
    assert (result.stop_reason, result.final_answer) == ("accepted", "A")
