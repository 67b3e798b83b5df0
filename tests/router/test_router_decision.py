"""`Router.score` decided by the checkpoint policy, and `RouterDecision`: p, τ, escalate, reasons,
cues, parse failures."""

from __future__ import annotations

import json

import numpy as np
import pytest

import features
from imad.critique.schema import CritiqueResponse
from imad.decide import checkpoint_policy
from imad.decide.decision import threshold_reason
from imad.errors import CritiqueParseError, FeatureError
from imad.question import Question, TaskType
from imad.router import RouterDecision
from tests.router.router_helpers import make_router, random_features

QUESTION = Question(
    text="Does aspirin reduce the risk of a second heart attack?",
    task_type=TaskType.YES_NO_MAYBE, id="pubmedqa-1", dataset="pubmedqa", gold="yes",
)
HEDGED = CritiqueResponse(
    initial_answer="yes",
    initial_reasoning="It might be yes, although the trials seem small and the effect may vary.",
    critique="Perhaps no: the benefit could be outweighed by bleeding, and it is unclear.",
    alternative_answer="no",
    final_answer="yes",
    confidence_initial=0.55,
    confidence_critique=0.5,
)


@pytest.fixture(scope="module")
def hedged_vector() -> np.ndarray:
    return features.extract(QUESTION.text, HEDGED).reshape(1, -1)


def test_decide_scores_the_extracted_features(router, hedged_vector):
    decision = checkpoint_policy(router.config).decide(router.score(QUESTION, HEDGED))
    p = float(router.predict_proba(hedged_vector)[0])
    assert isinstance(decision, RouterDecision)
    assert decision.id == "pubmedqa-1"
    assert decision.p == p and decision.tau == 0.7
    assert decision.escalate is (p < 0.7) and decision.keep is (p >= 0.7)
    assert decision.uncertainty == float(router.predict_uncertainty(hedged_vector)[0])
    assert decision.parse_status == "parsed" and decision.parse_error is None
    assert decision.reasons[0] == threshold_reason(p, 0.7)


@pytest.mark.parametrize("tau", [0.01, 0.99])
def test_escalate_is_p_below_tau_and_cues_point_the_same_way(hedged_vector, tau):
    router = make_router(seed=3, tau=tau)
    decision = checkpoint_policy(router.config).decide(router.score(QUESTION, HEDGED))
    assert decision.escalate is (decision.p < tau)
    assert 0 < len(decision.cues) <= 3 and len(decision.reasons) == 1 + len(decision.cues)
    sign = -1 if decision.escalate else 1
    assert all(sign * cue.delta_p >= 0.005 for cue in decision.cues)
    deltas = [abs(cue.delta_p) for cue in decision.cues]
    assert deltas == sorted(deltas, reverse=True)
    word = "lowers" if decision.escalate else "raises"
    assert all(word in reason for reason in decision.reasons[1:])
    # Each cue is p minus p with that feature at its training mean (the probes are one 42-row
    # product, whose float32 sums may round the last bits unlike the one-row kernel's).
    cue = decision.cues[0]
    column = router.feature_names.index(cue.feature)
    probe = hedged_vector.copy()
    probe[0, column] = router.scaler_mean[column]
    assert cue.delta_p == pytest.approx(decision.p - router.predict_proba(probe)[0], abs=1e-6)
    assert cue.value == hedged_vector[0, column]


def test_explain_gives_zero_effect_at_the_training_mean(router):
    row = router.scaler_mean.copy()
    cues = router.explain(row)
    assert [c.feature for c in cues] == list(router.feature_names)
    assert all(c.delta_p == 0.0 for c in cues)


def test_unparsed_response_escalates_with_its_reason(router):
    score = router.score(QUESTION, None, parse_error="truncated: hit the token limit")
    decision = checkpoint_policy(router.config).decide(score)
    assert decision.escalate and decision.p is None and decision.uncertainty is None
    assert decision.parse_status == "unparsed"
    assert decision.parse_error == "truncated: hit the token limit"
    assert decision.reasons[0] == "unparsed self-critique: truncated: hit the token limit"


def test_parse_error_object_is_accepted(router):
    error = CritiqueParseError("confidence_initial missing", raw_text="{...")
    decision = checkpoint_policy(router.config).decide(router.score("Is the sky blue?", error))
    assert decision.escalate and decision.parse_error == "confidence_initial missing"
    assert decision.id.startswith("q-") and len(decision.id) == 14


def test_question_without_id_gets_a_stable_content_id(router):
    first = router.score("Is the sky blue?", None).id
    assert first == router.score(Question(text="Is the sky blue?"), None).id


def test_decision_to_dict_is_json_ready(router):
    data = checkpoint_policy(router.config).decide(router.score(QUESTION, HEDGED)).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert set(data) == {"id", "p", "tau", "escalate", "reasons", "parse_status", "parse_error",
                         "uncertainty", "cues", "score_status", "tau_source", "ood_score", "ood",
                         "ood_policy", "would_escalate"}
    assert data["would_escalate"] is None  # outside shadow mode


def test_threshold_reason_text():
    assert threshold_reason(0.41, 0.7) == "p 0.41 < τ 0.70: escalate"
    assert threshold_reason(0.83, 0.7) == "p 0.83 ≥ τ 0.70: keep"
    assert threshold_reason(0.6999, 0.7) == "p 0.6999 < τ 0.7000: escalate"


@pytest.mark.parametrize("shape", [(41,), (3, 40), (2, 41, 1)])
def test_predict_proba_rejects_wrong_shapes(router, shape):
    with pytest.raises(FeatureError, match=r"shape \(n, 41\)"):
        router.predict_proba(np.zeros(shape))


def test_predict_proba_rejects_nan(router):
    rows = random_features(3)
    rows[1, 4] = np.nan
    with pytest.raises(FeatureError, match=r"rows \[1\]"):
        router.predict_proba(rows)


@pytest.mark.parametrize("fields, outcome", [
    ({"p": 0.9, "tau": 0.5, "escalate": False}, "kept"),
    ({"p": 0.2, "tau": 0.5, "escalate": True}, "below_tau"),
    ({"p": 0.9, "tau": 0.5, "escalate": True, "ood": True, "ood_policy": "escalate"}, "ood"),
    ({"p": None, "tau": 0.5, "escalate": True, "parse_status": "unparsed",
      "score_status": "unscored"}, "unparsed"),
    ({"p": None, "tau": 0.5, "escalate": True, "score_status": "non_finite"}, "non_finite"),
    ({"p": 0.9, "tau": 0.5, "escalate": True}, "certificate_violated"),
    ({"p": 0.9, "tau": 0.5, "escalate": True, "ood": True}, "certificate_violated"),
])
def test_outcome_names_why_an_answer_was_kept_or_escalated(fields, outcome):
    from imad.decide.schema import OUTCOMES

    decision = RouterDecision(id="q", reasons=(), **fields)
    assert decision.outcome == outcome and outcome in OUTCOMES


@pytest.mark.parametrize("shadow", [False, True])
def test_a_policy_escalating_all_escalates_a_kept_answer_with_its_reason(shadow):
    from imad.decide import FixedThreshold, Policy, RouterScore

    score = RouterScore(id="q", p=0.9, raw=0.9, uncertainty=0.1)
    reason = "certificate abc is violated: every answer escalates"
    decision = Policy(FixedThreshold(0.5), shadow=shadow, escalate_all=reason).decide(score)
    assert (decision.escalate, decision.would_escalate) == ((False, True) if shadow else (True, None))
    assert decision.reasons[0] == "p 0.90 ≥ τ 0.50: keep" and reason in decision.reasons
    assert Policy(FixedThreshold(0.5), escalate_all=reason).decide(score).outcome == "certificate_violated"
    assert Policy(FixedThreshold(0.5)).decide(score).escalate is False
