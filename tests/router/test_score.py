"""`Router.score` and `RouterScore`: the scorer's output, before any τ (SPEC §14)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

import features
from imad.critique.schema import CritiqueResponse
from imad.decide.score import RouterScore, ood_flag, unparsed_score
from imad.errors import ConfigError, CritiqueParseError
from imad.router import Router
from imad.router.calibrators import fit_calibrator
from imad.router.ood import MahalanobisOOD
from tests.router.router_helpers import make_router, random_features

QUESTION = "Does aspirin reduce the risk of a second heart attack?"
RESPONSE = CritiqueResponse(
    initial_answer="yes", initial_reasoning="It might be yes, although the trials seem small.",
    critique="Perhaps no: bleeding could outweigh the benefit.", alternative_answer="no",
    final_answer="yes", confidence_initial=0.55, confidence_critique=0.5)


@pytest.fixture(scope="module")
def vector() -> np.ndarray:
    return features.extract(QUESTION, RESPONSE).reshape(1, -1)


def test_score_is_the_calibrated_p_the_raw_score_and_every_cue(vector):
    router = make_router(seed=3)
    score = router.score(QUESTION, RESPONSE)
    assert score.p == float(router.predict_proba(vector)[0])
    assert score.raw == float(router.predict_raw(vector)[0]) == score.p  # identity calibrator
    assert score.uncertainty == float(router.predict_uncertainty(vector)[0])
    assert [cue.feature for cue in score.cues] == list(router.feature_names)
    assert score.cues == tuple(router.explain(vector))
    assert (score.score_status, score.parse_status, score.scored) == ("scored", "parsed", True)
    assert (score.ood_score, score.ood, score.ood_threshold) == (None, None, None)  # no statistics
    assert not hasattr(score, "tau")


def test_a_calibrator_moves_p_not_the_raw_score(vector):
    router = make_router(seed=3)
    raw = router.predict_raw(random_features(40, seed=7))
    labels = (np.arange(40) % 3 == 0).astype(int)
    recalibrated = router.with_calibrator(fit_calibrator(raw, labels, "platt"))
    before, after = router.score(QUESTION, RESPONSE), recalibrated.score(QUESTION, RESPONSE)
    assert after.raw == before.raw and after.p != before.p
    assert after.p == float(recalibrated.predict_proba(vector)[0])


def test_unparsed_answer_is_unscored_with_its_reason():
    router = make_router()
    score = router.score(QUESTION, CritiqueParseError("confidence_initial missing", "{"))
    assert (score.p, score.raw, score.uncertainty, score.cues) == (None, None, None, ())
    assert (score.parse_status, score.score_status, score.parse_error) == (
        "unparsed", "unscored", "confidence_initial missing")
    assert router.score(QUESTION, None, parse_error="truncated").parse_error == "truncated"
    assert router.score(QUESTION, None) == unparsed_score(score.id, "no response")


def test_a_non_finite_network_score_is_withheld():
    router = make_router(seed=5)
    with torch.no_grad():
        router.net.bias.fill_(math.nan)
    score = router.score(QUESTION, RESPONSE)
    assert score.p is None and score.score_status == "non_finite" and not score.scored
    assert math.isnan(score.raw) and math.isfinite(score.uncertainty)
    assert json.loads(json.dumps(score.to_dict(), allow_nan=False))["raw"] is None


def test_ood_flag_unknown_familiar_unfamiliar_and_doubtful():
    assert ood_flag(None, 3.0) == (None, None, False)
    assert ood_flag(2.0, None) == (None, None, False)
    assert ood_flag(2.0, 3.0) == (2.0, False, False)
    assert ood_flag(3.5, 3.0) == (3.5, True, False)
    for value in (math.nan, math.inf, -math.inf):
        assert ood_flag(value, 3.0) == (None, True, True)  # never read as "familiar"


def test_router_flags_a_non_finite_ood_score_as_doubtful(vector):
    router = make_router()
    n = len(router.feature_names)
    detector = MahalanobisOOD(3.0, np.zeros(n), np.eye(n), 0.0)
    flagged = router.with_ood(detector)
    score = flagged.score(QUESTION, RESPONSE)
    expected = float(detector.score(router.scale(vector))[0])
    assert score.ood_score == expected and score.ood is (expected > 3.0)
    assert (score.ood_threshold, score.ood_doubtful) == (3.0, False)
    flagged._ood = MahalanobisOOD(3.0, np.full(n, math.nan), np.eye(n), 0.0)  # damage after load
    doubtful = flagged.score(QUESTION, RESPONSE)
    assert (doubtful.ood_score, doubtful.ood, doubtful.ood_doubtful) == (None, True, True)
    assert doubtful.p == score.p


@pytest.mark.parametrize(("fields", "field"), [
    ({"score_status": "maybe"}, "score_status"),
    ({"parse_status": "half"}, "parse_status"),
    ({"parse_status": "unparsed"}, "score_status"),            # unparsed must be unscored
    ({"p": None, "score_status": "unscored"}, "score_status"),  # unscored must be unparsed
    ({"p": 0.4, "score_status": "non_finite"}, "p"),           # a withheld p is None
])
def test_inconsistent_scores_are_refused(fields, field):
    with pytest.raises(ConfigError) as raised:
        RouterScore(**{"id": "q", "p": 0.5, **fields})
    assert raised.value.field == field


def test_to_dict_is_strict_json_and_names_every_field():
    score = make_router().score(QUESTION, RESPONSE)
    data = score.to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert set(data) == {"id", "p", "raw", "uncertainty", "cues", "ood_score", "ood_threshold",
                         "ood", "ood_doubtful", "parse_status", "parse_error", "score_status"}
    assert len(data["cues"]) == 41


@pytest.mark.slow
def test_a_shipped_router_scores_a_recorded_answer_like_predict_proba():
    router = Router.load("imad-router-v2")
    score = router.score(QUESTION, RESPONSE)
    vector = features.extract(QUESTION, RESPONSE, schema_version=router.feature_schema_version).reshape(1, -1)
    assert score.p == float(router.predict_proba(vector)[0])
    assert isinstance(score.ood, bool) and score.ood_threshold == router.ood_detector.threshold
