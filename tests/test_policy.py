"""`imad.decide.policy`: a threshold rule composed with an OOD policy turns a `RouterScore` into a
`RouterDecision` (SPEC §14). Scores are built by hand so every branch is forced; one test runs
the real router."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from imad.critique.schema import CritiqueResponse
from imad.decide.budget import TriggerBudget
from imad.decide.policy import (
    FixedThreshold,
    Policy,
    ThresholdRule,
    as_policy,
    checkpoint_policy,
    checkpoint_threshold,
    choose_policy,
    chosen_threshold,
)
from imad.decide.score import Cue, RouterScore, unparsed_score
from imad.errors import ConfigError
from tests.router.router_helpers import make_router

CUES = (Cue("conf_initial", 0.9, 0.20), Cue("r_hedge_count", 3.0, -0.12),
        Cue("c_tokens", 40.0, 0.004), Cue("q_tokens", 12.0, -0.03), Cue("r_tokens", 30.0, 0.07))


def scored(p: float, *, ood: bool | None = None, ood_score: float | None = None,
           doubtful: bool = False) -> RouterScore:
    return RouterScore(id="q", p=p, raw=p, uncertainty=0.2, cues=CUES, ood_score=ood_score,
                       ood_threshold=None if ood is None else 3.0, ood=ood, ood_doubtful=doubtful)


def test_fixed_threshold_keeps_at_or_above_tau_and_says_why():
    policy = Policy(FixedThreshold(0.6))
    kept, escalated = policy.decide(scored(0.6)), policy.decide(scored(0.59))
    assert (kept.escalate, kept.tau, kept.tau_source, kept.outcome) == (False, 0.6, "request", "kept")
    assert kept.reasons[0] == "p 0.6000 ≥ τ 0.6000: keep"  # equal at 2 digits: 4 shown
    # cues toward the decision, largest first, at least MIN_CUE_DELTA, at most max_cues
    assert [c.feature for c in kept.cues] == ["conf_initial", "r_tokens"]
    assert [c.feature for c in escalated.cues] == ["r_hedge_count", "q_tokens"]
    assert escalated.reasons == ("p 0.59 < τ 0.60: escalate", "r_hedge_count=3 lowers p by 0.12",
                                 "q_tokens=12 lowers p by 0.03")
    assert Policy(FixedThreshold(0.6), max_cues=1).decide(scored(0.7)).cues == (CUES[0],)
    assert Policy(FixedThreshold(0.6), max_cues=0).decide(scored(0.7)).reasons == ("p 0.70 ≥ τ 0.60: keep",)


@pytest.mark.parametrize(("ood_policy", "escalate", "outcome", "ending"), [
    ("flag", False, "kept", "(ood_policy flag)"),
    ("escalate", True, "ood", "escalate (ood_policy escalate)"),
])
def test_fixed_threshold_with_an_ood_policy(ood_policy, escalate, outcome, ending):
    decision = Policy(FixedThreshold(0.2), ood_policy=ood_policy).decide(
        scored(0.8, ood=True, ood_score=9.5))
    assert (decision.escalate, decision.outcome, decision.ood, decision.ood_score) == (
        escalate, outcome, True, 9.5)
    assert decision.reasons[1].startswith("unlike the router's training answers (OOD score 9.50 > 3.00)")
    assert decision.reasons[1].endswith(ending)
    assert decision.ood_policy == ood_policy


def test_below_tau_and_unfamiliar_is_a_below_tau_escalation():
    decision = Policy(FixedThreshold(0.9), ood_policy="escalate").decide(
        scored(0.5, ood=True, ood_score=4.0))
    assert decision.outcome == "below_tau" and decision.reasons[1].endswith("escalated anyway")


@pytest.mark.parametrize(("ood_policy", "escalate"), [("flag", False), ("escalate", True)])
def test_a_doubtful_ood_score_is_flagged_and_escalates_under_escalate(ood_policy, escalate):
    decision = Policy(FixedThreshold(0.0), ood_policy=ood_policy).decide(
        scored(0.8, ood=True, doubtful=True))
    assert (decision.escalate, decision.ood, decision.ood_score) == (escalate, True, None)
    assert decision.reasons[1].startswith("the OOD score is not a finite number (doubtful")


def test_familiar_and_unknown_ood_never_escalate():
    for score in (scored(0.8, ood=False, ood_score=1.0), scored(0.8)):
        decision = Policy(FixedThreshold(0.5), ood_policy="escalate").decide(score)
        assert not decision.escalate and len(decision.reasons) == 1 + len(decision.cues)


@pytest.mark.parametrize("tau", [0.0, 0.5])
def test_unparsed_and_non_finite_always_escalate(tau):
    policy = Policy(FixedThreshold(tau))
    unparsed = policy.decide(unparsed_score("q", "truncated"))
    assert (unparsed.escalate, unparsed.p, unparsed.outcome, unparsed.tau) == (True, None, "unparsed", tau)
    assert unparsed.reasons[0] == "unparsed self-critique: truncated"
    withheld = policy.decide(RouterScore(id="q", p=None, raw=math.inf, uncertainty=0.1,
                                         score_status="non_finite"))
    assert (withheld.escalate, withheld.p, withheld.outcome) == (True, None, "non_finite")
    assert withheld.reasons == ("router score is not finite (p inf, u 0.1): escalate",)
    # a duck-typed scorer that says "scored" with a NaN p is not trusted either
    nan = policy.decide(replace(scored(0.9), p=math.nan))
    assert (nan.escalate, nan.p, nan.score_status, nan.outcome) == (True, None, "non_finite", "non_finite")


def test_trigger_budget_with_flag_observes_every_answer_and_names_its_source():
    budget = TriggerBudget(0.5, window=4, min_observations=2, initial_threshold=0.3,
                           initial_source="request")
    policy = Policy(budget, ood_policy="flag")
    first = policy.decide(scored(0.6, ood=True, ood_score=5.0))  # warm-up: the initial τ
    assert (first.tau, first.tau_source, first.escalate, first.ood) == (0.3, "request", False, True)
    second = policy.decide(scored(0.4))  # window [0.6, 0.4]: the 0.5 quantile is 0.4
    assert (second.tau, second.tau_source, second.escalate) == (0.4, "budget", False)
    third = policy.decide(scored(0.1))
    assert (third.tau_source, third.escalate) == ("budget", True)
    assert budget.stats().observed_total == 3


def test_a_budget_observes_unparsed_and_non_finite_answers_as_unparsed():
    budget = TriggerBudget(0.5, window=10, min_observations=1, initial_threshold=0.7)
    policy = Policy(budget)
    unparsed = policy.decide(unparsed_score("q", "not JSON"))
    assert (unparsed.tau, unparsed.tau_source, unparsed.escalate) == (0.7, "checkpoint", True)
    policy.decide(RouterScore(id="q", p=None, raw=math.nan, uncertainty=0.1, score_status="non_finite"))
    stats = budget.stats()
    assert (stats.answers_in_window, stats.unparsed_in_window, stats.realized_rate) == (2, 2, 1.0)
    # the unparsed answers used the budget up: τ 0 keeps the next scored answer
    kept = policy.decide(scored(0.05))
    assert (kept.tau, kept.tau_source, kept.escalate) == (0.0, "budget", False)


def test_a_budget_without_an_initial_tau_reports_tau_1_for_an_unscored_first_answer():
    decision = Policy(TriggerBudget(0.2)).decide(unparsed_score("q", "empty"))
    assert (decision.tau, decision.tau_source, decision.escalate) == (1.0, "checkpoint", True)


def test_tau_source_is_set_once_where_tau_is_chosen():
    router = make_router(tau=0.7)
    config = router.config
    assert chosen_threshold(config, None) == checkpoint_threshold(config) == FixedThreshold(
        0.7, source="checkpoint", method=router.config.threshold.method)
    assert chosen_threshold(config, 0.25) == FixedThreshold(0.25, method="set for this request (--tau)")
    assert choose_policy(config, tau=0.25).decide(scored(0.3)).tau_source == "request"
    assert choose_policy(config).decide(scored(0.3)).tau_source == "checkpoint"
    budget = TriggerBudget(0.2)
    assert choose_policy(config, tau=0.25, rule=budget).rule is budget  # a rule wins over τ
    assert choose_policy(config, ood_policy="flag").ood_policy == "flag"


def test_as_policy_takes_a_policy_a_rule_or_none():
    config = make_router().config
    policy = Policy(FixedThreshold(0.4))
    assert as_policy(config, policy) is policy
    assert as_policy(config, FixedThreshold(0.4)).rule == FixedThreshold(0.4)
    assert as_policy(config, None).rule == checkpoint_threshold(config)
    with pytest.raises(ConfigError, match="ood_policy: 'escalate' needs OOD statistics"):
        as_policy(config, Policy(FixedThreshold(0.4), ood_policy="escalate"))
    assert isinstance(TriggerBudget(0.2), ThresholdRule) and isinstance(FixedThreshold(0.1), ThresholdRule)


def test_the_real_router_scores_and_the_checkpoint_policy_decides():
    router = make_router(seed=3, tau=0.5)
    response = CritiqueResponse(initial_answer="yes", initial_reasoning="It is likely.",
                                critique="It could be no.", alternative_answer="no",
                                final_answer="yes", confidence_initial=0.8, confidence_critique=0.3)
    score = router.score("Is it?", response)
    decision = checkpoint_policy(router.config).decide(score)
    assert (decision.tau, decision.tau_source, decision.escalate) == (0.5, "checkpoint", score.p < 0.5)
    assert Policy(FixedThreshold(1.0)).decide(score).escalate
