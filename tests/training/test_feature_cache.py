"""The feature cache: the extractor's matrix, read back from disk when the texts are the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import features
from imad.corpus_records import read_records
from imad.critique.schema import CritiqueResponse
from training.feature_cache import extract_features

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "corpus_small" / "pubmedqa.jsonl"


@pytest.fixture(scope="module")
def answers() -> tuple[list[str], list[CritiqueResponse]]:
    """Four real answers of the fixture corpus."""
    records = [r for r in read_records(FIXTURE) if r.parsed is not None][:4]
    return ([str(r.question["text"]) for r in records],
            [CritiqueResponse.from_dict(r.parsed) for r in records])


def refuse(*args, **kwargs):
    raise AssertionError("features re-extracted despite the cache")


def test_cached_matrix_is_the_extractors_and_is_reused(answers, tmp_path, monkeypatch):
    questions, responses = answers
    expected = features.extract_batch(questions, responses)
    first = extract_features(questions, responses, cache=tmp_path)
    assert first.dtype == np.float64 and np.array_equal(first, expected)
    [saved] = tmp_path.glob("features-*.npy")
    assert np.array_equal(np.load(saved, allow_pickle=False), expected)  # no pickle inside

    monkeypatch.setattr(features, "extract_batch", refuse)
    assert np.array_equal(extract_features(questions, responses, cache=tmp_path), expected)


def test_another_text_gets_another_file(answers, tmp_path):
    questions, responses = answers
    extract_features(questions, responses, cache=tmp_path)
    changed = extract_features([questions[0] + " Really?", *questions[1:]], responses, cache=tmp_path)
    assert len(list(tmp_path.glob("features-*.npy"))) == 2
    assert changed.shape == (4, len(features.FEATURE_NAMES))


def test_a_cached_file_of_the_wrong_shape_is_replaced(answers, tmp_path):
    questions, responses = answers
    expected = extract_features(questions, responses)  # no cache: nothing written
    assert not list(tmp_path.iterdir())
    extract_features(questions, responses, cache=tmp_path)
    [saved] = tmp_path.glob("features-*.npy")
    np.save(saved, np.zeros((1, 1)))
    assert np.array_equal(extract_features(questions, responses, cache=tmp_path), expected)
    assert np.load(saved).shape == expected.shape
