"""The router's boundary with `features` (imad/router/featurize.py, issues 15 and 17).

Feature errors come out as imad's, with the same message; a router extracts with the schema
its checkpoint records, so the shipped v1 checkpoint keeps getting v1 vectors; a checkpoint of
a schema this imad does not compute is refused by name.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import features
from features import errors as feature_errors
from features.names import schema_hash
from imad.critique.schema import CritiqueResponse
from imad.decide import checkpoint_policy
from imad.errors import CheckpointError, FeatureError, ImadError, MissingDependencyError
from imad.router import Router, featurize
from imad.router.checkpoint import CONFIG_FILE
from tests.router.router_helpers import make_router

SHIPPED_V1 = Path(__file__).resolve().parents[2] / "checkpoints" / "imad-router-v1"
QUESTION = "What is the capital of France?"
# The critique names "French": a NER entity in v1, an adjective in v2 — the vectors differ.
RESPONSE = CritiqueResponse(
    "lyon", "The capital of France is Lyon. Lyon is a large and famous city.",
    "However, the French government meets in Paris. I think the answer is Paris.",
    "paris", "paris", 0.9, 0.4)


def test_a_feature_error_becomes_imads_with_the_same_message():
    bad = CritiqueResponse("a", "b", "c", "d", "a", 1.5, 0.5)
    with pytest.raises(FeatureError) as error:
        featurize.extract(QUESTION, bad, 2)
    assert isinstance(error.value, ImadError)
    assert str(error.value) == "responses[0].confidence_initial must be a number in [0, 1], got 1.5"
    assert isinstance(error.value.__cause__, feature_errors.FeatureError)


def test_an_unknown_schema_is_imads_feature_error():
    with pytest.raises(FeatureError, match=r"unknown feature schema version 7.*\[1, 2\]"):
        featurize.extract_batch([QUESTION], [RESPONSE], 7)


def test_a_missing_dependency_becomes_imads_with_the_install_command(monkeypatch):
    def missing(*args, **kwargs):
        raise feature_errors.MissingDependencyError("spacy", "pip install spacy", "the test")

    monkeypatch.setattr(features, "extract", missing)
    with pytest.raises(MissingDependencyError) as error:
        featurize.extract(QUESTION, RESPONSE, 2)
    assert (error.value.package, error.value.install) == ("spacy", "pip install spacy")
    assert str(error.value) == "the test needs the package 'spacy'. Install it with: pip install spacy"


def test_the_shipped_v1_checkpoint_decides_on_v1_features():
    router = Router.load(SHIPPED_V1)
    assert router.feature_schema_version == 1
    v1 = features.extract(QUESTION, RESPONSE, schema_version=1)
    v2 = features.extract(QUESTION, RESPONSE, schema_version=2)
    assert not np.array_equal(v1, v2)
    decision = checkpoint_policy(router.config).decide(router.score(QUESTION, RESPONSE))
    assert decision.p == float(router.predict_proba(v1.reshape(1, -1))[0])
    assert decision.p != float(router.predict_proba(v2.reshape(1, -1))[0])


def test_a_v2_router_decides_on_v2_features():
    router = make_router()
    assert router.feature_schema_version == 2
    v2 = features.extract(QUESTION, RESPONSE, schema_version=2)
    assert router.score(QUESTION, RESPONSE).p == float(router.predict_proba(v2.reshape(1, -1))[0])


def test_a_checkpoint_of_a_schema_this_imad_does_not_compute_is_refused(tmp_path):
    path = make_router().save(tmp_path / "ckpt")
    config = json.loads((path / CONFIG_FILE).read_text())
    config["features"]["schema_version"] = 3
    config["features"]["hash"] = schema_hash(3, config["features"]["names"])
    (path / CONFIG_FILE).write_text(json.dumps(config, indent=2))
    with pytest.raises(CheckpointError) as error:
        Router.load(path)
    message = str(error.value)
    assert "trained on feature schema v3" in message
    assert "computes feature schemas v1 (hash 2ef96ff86015…), v2 (hash ee867d1adebb…)" in message
