"""Scoring and deciding under drift (issue 16): OOD statistics in the config, the OOD policy of a
`Policy`, and a trigger budget's τ recorded in the decision."""

from __future__ import annotations

import json

import numpy as np
import pytest

import features
from imad.critique.schema import CritiqueResponse
from imad.decide.budget import TriggerBudget
from imad.decide.policy import FixedThreshold, Policy, checkpoint_policy
from imad.errors import CheckpointError, ConfigError, CritiqueParseError
from imad.router import Router, RouterConfig
from imad.router.ood import MahalanobisOOD, fit_mahalanobis
from tests.router.router_helpers import make_router, random_features

QUESTION = "Does aspirin reduce the risk of a second heart attack?"
RESPONSE = CritiqueResponse(
    initial_answer="yes", initial_reasoning="Trials show a lower rate of second infarctions.",
    critique="The trials are large and consistent.", alternative_answer="no",
    final_answer="yes", confidence_initial=0.9, confidence_critique=0.1)


@pytest.fixture(scope="module")
def scaled_response() -> np.ndarray:
    """The router-scaled feature vector of RESPONSE, shape (1, 41)."""
    return make_router().scale(features.extract(QUESTION, RESPONSE).reshape(1, -1))


def detector_at(centre: np.ndarray, threshold: float = 3.0) -> MahalanobisOOD:
    """Identity covariance around `centre`: a row's score is its Euclidean distance to it."""
    d = centre.size
    return MahalanobisOOD(threshold, centre.astype(np.float64), np.eye(d), 0.0)


def test_old_checkpoint_without_ood_section_loads_with_ood_none(saved_router):
    data = json.loads((saved_router / "config.json").read_text())
    assert "ood" not in data and "ood_policy" not in data  # written as before issue 16
    router = Router.load(saved_router)
    assert router.ood_detector is None and router.config.ood_policy == "flag"
    decision = checkpoint_policy(router.config).decide(router.score(QUESTION, RESPONSE))
    assert (decision.ood_score, decision.ood, decision.tau_source) == (None, None, "checkpoint")


def test_ood_section_round_trips_and_scores_the_same(tmp_path):
    router = make_router()
    train, validation = router.scale(random_features(300, seed=2)), router.scale(random_features(100, seed=3))
    with_ood = router.with_ood(fit_mahalanobis(train, validation))
    with_ood = with_ood.with_config(with_ood.config.with_ood_policy("escalate"))  # stored as data
    with_ood.save(tmp_path / "r")
    loaded = Router.load(tmp_path / "r")
    assert loaded.config.ood == with_ood.config.ood and loaded.config.ood_policy == "escalate"
    assert checkpoint_policy(loaded.config).ood_policy == "escalate"
    rows = router.scale(random_features(20, seed=4))
    assert np.array_equal(loaded.ood_detector.score(rows), with_ood.ood_detector.score(rows))
    data = json.loads((tmp_path / "r" / "config.json").read_text())
    assert RouterConfig.from_dict(data).to_dict() == data


def test_damaged_ood_section_is_refused_naming_it(tmp_path):
    router = make_router().with_ood(detector_at(np.zeros(len(features.FEATURE_NAMES))))
    router.save(tmp_path / "r")
    path = tmp_path / "r" / "config.json"
    data = json.loads(path.read_text())
    data["ood"]["covariance"][0][0] = -1.0
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=r"ood\.covariance"):
        Router.load(tmp_path / "r")


def test_escalate_policy_needs_ood_statistics():
    router = make_router()
    with pytest.raises(ConfigError, match="ood_policy.*--add-ood"):
        Policy(FixedThreshold(0.5), ood_policy="escalate").check_router(router.name,
                                                                        has_ood_statistics=False)
    Policy(FixedThreshold(0.5), ood_policy="escalate").check_router(router.name,
                                                                    has_ood_statistics=True)
    with pytest.raises(ConfigError, match="ood_policy.*--add-ood"):
        router.config.with_ood_policy("escalate")  # a checkpoint cannot store it either
    with pytest.raises(ConfigError, match="ood_policy"):
        Policy(FixedThreshold(0.5), ood_policy="ignore")


@pytest.mark.parametrize(("policy", "escalate"), [("flag", False), ("escalate", True)])
def test_shifted_row_is_flagged_and_the_policy_decides(scaled_response, policy, escalate):
    shift = np.zeros(scaled_response.shape[1])
    shift[0] = 10.0  # the answer lies 10 training deviations away from the detector's centre
    router = make_router(tau=0.0).with_ood(detector_at(scaled_response[0] + shift))
    own = Policy(checkpoint_policy(router.config).rule, ood_policy=policy)
    decision = own.decide(router.score(QUESTION, RESPONSE))
    assert decision.ood is True and decision.ood_score == pytest.approx(10.0)
    assert decision.escalate is escalate and decision.ood_policy == policy
    assert decision.p >= decision.tau  # kept by τ = 0: only the OOD policy can escalate it
    assert "unlike the router's training answers (OOD score 10.00 > 3.00)" in decision.reasons[1]
    assert decision.reasons[1].endswith("(ood_policy escalate)" if escalate else "(ood_policy flag)")


def test_familiar_row_is_not_flagged(scaled_response):
    router = make_router(tau=0.0).with_ood(detector_at(scaled_response[0]))
    decision = Policy(FixedThreshold(0.0), ood_policy="escalate").decide(router.score(QUESTION, RESPONSE))
    assert decision.ood is False and decision.ood_score == pytest.approx(0.0, abs=1e-9)
    assert not decision.escalate and len(decision.reasons) >= 1
    assert not any("OOD" in reason for reason in decision.reasons)


def test_unparsed_answer_has_no_ood_score(scaled_response):
    router = make_router().with_ood(detector_at(scaled_response[0]))
    score = router.score(QUESTION, CritiqueParseError("not JSON", "oops"))
    decision = checkpoint_policy(router.config).decide(score)
    assert (decision.ood_score, decision.ood, decision.escalate) == (None, None, True)


def test_budget_tau_is_used_and_recorded():
    router = make_router(tau=0.0)
    p = router.score(QUESTION, RESPONSE).p
    budget = TriggerBudget(0.5, window=4, min_observations=2, initial_threshold=0.0)
    first = Policy(budget).decide(router.score(QUESTION, RESPONSE))
    assert (first.tau, first.tau_source, first.escalate) == (0.0, "checkpoint", False)  # warm-up
    second = Policy(budget).decide(router.score(QUESTION, RESPONSE))
    # Two equal scores: the 0.5 inverted-CDF quantile is p itself, and p < p is false.
    assert (second.tau, second.tau_source, second.escalate) == (p, "budget", False)
    assert budget.stats().observed_total == 2


def test_unparsed_answer_is_observed_as_unparsed():
    budget = TriggerBudget(0.5, window=4, min_observations=1, initial_threshold=0.3,
                           initial_source="request")
    decision = Policy(budget).decide(make_router().score(QUESTION, None, parse_error="truncated"))
    stats = budget.stats()
    assert (stats.unparsed_in_window, stats.answers_in_window) == (1, 1)
    assert (decision.tau, decision.tau_source, decision.escalate) == (0.3, "request", True)
