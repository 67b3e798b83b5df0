"""Corpus → features → stratified split → train-only scaler → batches."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

import features
from imad.errors import DatasetError
from training.config import DEFAULT_CORPUS
from training.datamodule import (
    CorpusDataModule,
    CorpusTable,
    corpus_files,
    load_corpus,
    stratified_split,
)

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


def test_split_is_stratified_disjoint_and_seeded(table):
    train, validation, stratify_by = stratified_split(table.labels, table.datasets, 0.2, 42)
    assert stratify_by == "dataset × label"
    assert (train.size, validation.size) == (132, 33)
    assert np.intersect1d(train, validation).size == 0
    assert np.array_equal(np.union1d(train, validation), np.arange(165))
    assert abs(table.labels[validation].mean() - table.labels.mean()) < 0.03
    assert {table.datasets[i] for i in validation} == {"gqa", "pubmedqa"}
    again = stratified_split(table.labels, table.datasets, 0.2, 42)
    assert np.array_equal(again[1], validation)
    assert not np.array_equal(stratified_split(table.labels, table.datasets, 0.2, 1)[1],
                              validation)


def test_split_needs_both_classes():
    with pytest.raises(DatasetError, match="at least 2 right and 2 wrong"):
        stratified_split(np.array([1, 1, 1, 0]), ["a"] * 4, 0.2, 42)


def test_scaler_is_fitted_on_training_rows_only(table):
    module = CorpusDataModule(table)
    train_rows, _ = module.rows("train")
    np.testing.assert_allclose(module.scaler_mean, train_rows.mean(axis=0))
    assert not np.allclose(module.scaler_mean, table.features.mean(axis=0))
    assert module.split_summary["train"] == 132 and module.split_summary["seed"] == 42


def test_batches_hold_scaled_features_raw_confidence_and_labels(table):
    module = CorpusDataModule(table, batch_size=64)
    module.setup("fit")
    batches = list(module.train_dataloader())
    assert [len(b[0]) for b in batches] == [64, 64, 4]
    features_batch, confidence, labels = next(iter(module.val_dataloader()))
    raw, y = module.rows("validation")
    expected = ((raw - module.scaler_mean) / module.scaler_scale).astype(np.float32)
    assert np.array_equal(features_batch.numpy(), expected[:33])
    assert np.array_equal(confidence.numpy(), raw[:, CONF].astype(np.float32))
    assert np.array_equal(labels.numpy(), y.astype(np.float32))


def test_a_final_batch_of_one_row_is_dropped(table):
    module = CorpusDataModule(table, batch_size=131)  # 132 training rows → 131 + 1
    assert [len(b[0]) for b in module.train_dataloader()] == [131]


def test_training_batches_are_shuffled_reproducibly(table):
    first = [b[2].tolist() for b in CorpusDataModule(table, seed=3).train_dataloader()]
    second = [b[2].tolist() for b in CorpusDataModule(table, seed=3).train_dataloader()]
    other = [b[2].tolist() for b in CorpusDataModule(table, seed=4).train_dataloader()]
    assert first == second and first != other
