"""Corpus files → labelled records → features (cached) → a table and its summary."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

import features
from imad.errors import DatasetError
from training.config import DEFAULT_CORPUS
from training.corpus_table import CorpusTable, corpus_files, load_corpus

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "corpus_small"
CONF = features.FEATURE_NAMES.index("conf_initial")


@pytest.fixture(scope="module")
def feature_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("feature-cache")


@pytest.fixture(scope="module")
def table(feature_cache) -> CorpusTable:
    return load_corpus([FIXTURE], feature_cache=feature_cache)


def test_directories_expand_to_sorted_jsonl_files_without_duplicates():
    files = corpus_files([FIXTURE, FIXTURE / "gqa.jsonl"])
    assert [f.name for f in files] == ["gqa.jsonl", "pubmedqa.jsonl"]


def test_default_corpus_is_found_from_any_working_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    files = corpus_files(DEFAULT_CORPUS)
    assert {f.name for f in files} >= {"pubmedqa.jsonl", "gqa.jsonl"}


def test_missing_corpus_says_how_to_build_one(tmp_path):
    with pytest.raises(DatasetError, match="python -m training.corpus"):
        corpus_files([tmp_path / "absent"])
    with pytest.raises(DatasetError, match="holds no .jsonl"):
        corpus_files([tmp_path])


def test_parse_failures_are_skipped_but_counted(table):
    summary = table.summary
    assert table.features.shape == (165, 41) and table.labels.shape == (165,)
    assert (summary["records"], summary["labelled"], summary["parse_failures"]) == (180, 165, 15)
    assert summary["datasets"]["gqa"]["parse_failures"] == 9
    assert summary["datasets"]["pubmedqa"]["labelled"] == 84
    assert summary["datasets"]["pubmedqa"]["positive_rate"] == pytest.approx(40 / 84)
    assert summary["model_ids"] == ["synthetic-fixture"]
    assert summary["confidence_sources"] == ["verbal"]
    assert summary["prompt_versions"] == ["self-critique-v1"]
    gqa = summary["files"][0]
    assert gqa["path"].endswith("tests/fixtures/corpus_small/gqa.jsonl")
    assert gqa["sha256"] == hashlib.sha256((FIXTURE / "gqa.jsonl").read_bytes()).hexdigest()


def test_features_match_the_extractor_and_the_cache_is_used(table, feature_cache, monkeypatch):
    assert np.array_equal(table.features[:, CONF], np.clip(table.features[:, CONF], 0, 1))
    assert len(list(feature_cache.glob("features-*.npy"))) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("features re-extracted despite the cache")

    monkeypatch.setattr(features, "extract_batch", refuse)
    again = load_corpus([FIXTURE], feature_cache=feature_cache)
    assert np.array_equal(again.features, table.features)
