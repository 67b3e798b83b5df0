"""Scoring many answers at once (`score_batch`, `score_vectors`, `scored_rows`): each score is
bit-identical to the answer scored alone, whatever the calibrator or the OOD statistics."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch

from imad.critique.schema import CritiqueResponse
from imad.errors import FeatureError
from imad.question import Question
from imad.router import Router
from imad.router.calibrators import fit_calibrator
from imad.router.ood import MahalanobisOOD
from tests.router.router_helpers import make_router, random_features


def response(index: int) -> CritiqueResponse:
    return CritiqueResponse(
        initial_answer="yes", initial_reasoning=f"Trial {index} seems small, although it might be yes.",
        critique="Perhaps no: bleeding could outweigh the benefit.", alternative_answer="no",
        final_answer="yes", confidence_initial=index / 10, confidence_critique=0.5)


def routers() -> dict[str, Router]:
    plain = make_router(seed=11)
    raw = plain.predict_raw(random_features(60, seed=2))
    labels = (np.arange(60) % 3 == 0).astype(int)
    n = len(plain.feature_names)
    return {
        "plain": plain,
        "shipped": Router.load(),  # with OOD statistics
        **{kind: plain.with_calibrator(fit_calibrator(raw, labels, kind))
           for kind in ("temperature", "platt", "isotonic")},
        "ood": plain.with_ood(MahalanobisOOD(3.0, np.zeros(n), np.eye(n), 0.0)),
    }


@pytest.mark.parametrize("name", list(routers()))
def test_a_batch_scores_each_row_as_it_scores_alone(name):
    router = routers()[name]
    matrix = random_features(37, seed=4)
    ids = [f"q{row}" for row in range(len(matrix))]
    together = router.score_vectors(ids, matrix)
    alone = [router.score_vectors([ids[row]], matrix[row:row + 1])[0] for row in range(len(matrix))]
    assert together == alone  # p, raw, u, every cue, the OOD score: all bit-identical


def test_score_batch_extracts_once_and_matches_score():
    router = Router.load()
    questions = [Question("Does aspirin help?", id="a"), "Does exercise help?", Question("Is it safe?")]
    responses = [response(index) for index in range(3)]
    batch = router.score_batch(questions, responses)
    assert batch == [router.score(question, answer)
                     for question, answer in zip(questions, responses, strict=True)]
    assert batch[0].id == "a" and batch[1].id.startswith("q-")


def test_an_empty_batch_is_an_empty_list():
    router = make_router()
    assert router.score_vectors([], np.zeros((0, len(router.feature_names)))) == []
    assert len(router.scored_rows(np.zeros((0, len(router.feature_names))))) == 0


def test_a_non_finite_row_is_withheld_and_its_neighbours_are_not():
    router = make_router(seed=5)
    matrix = random_features(3, seed=1)
    with torch.no_grad():
        router.net.confidence_weight.fill_(math.inf)  # ±inf·logit: p is 0, 1 or NaN per row
    scores = router.score_vectors(["a", "b", "c"], matrix)
    for score, alone in zip(scores, (router.score_vectors([i], matrix[k:k + 1])[0]
                                     for k, i in enumerate("abc")), strict=True):
        assert (score.score_status, score.p is None) == (alone.score_status, alone.p is None)


@pytest.mark.parametrize(("ids", "shape", "message"), [
    (["a"], (2, 41), "1 ids for 2 feature rows"),
    (["a"], (1, 40), "expected a feature matrix of shape (n, 41)"),
])
def test_mismatched_ids_or_shapes_are_feature_errors(ids, shape, message):
    with pytest.raises(FeatureError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_router().score_vectors(ids, np.ones(shape))


def test_a_router_and_its_rows_survive_pickling():
    """What the server's scoring process receives (the router, once) and sends back (rows)."""
    router = Router.load()
    copy = pickle.loads(pickle.dumps(router))
    assert copy.config == router.config
    matrix = random_features(4, seed=9)
    rows = copy.scored_rows(matrix)
    back = pickle.loads(pickle.dumps(rows))
    assert [back.score(k, "q") for k in range(4)] == router.score_vectors(["q"] * 4, matrix)
    assert type(copy.config.ood) is type(router.config.ood)  # still read-only
