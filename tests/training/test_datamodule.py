"""The DataModule: a train-only scaler and (scaled features, raw conf_initial, label) batches.

The table holds the fixture corpus's real labels and datasets (so the split is the real one)
and seeded random features: what is tested is the batching, not the extractor.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import features
from imad.corpus_records import read_records
from training.corpus_table import CorpusTable
from training.datamodule import CorpusDataModule

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "corpus_small"
CONF = features.FEATURE_NAMES.index("conf_initial")


@pytest.fixture(scope="module")
def table() -> CorpusTable:
    records = [r for name in ("gqa.jsonl", "pubmedqa.jsonl") for r in read_records(FIXTURE / name)
               if r.label is not None and r.parsed is not None]
    generator = np.random.default_rng(0)
    matrix = generator.normal(3.0, 2.0, size=(len(records), len(features.FEATURE_NAMES)))
    matrix[:, CONF] = generator.uniform(0, 1, size=len(records))
    return CorpusTable(features=matrix, labels=np.array([int(r.label) for r in records]),
                       datasets=tuple(r.dataset for r in records),
                       question_ids=tuple(r.question_id for r in records))


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
