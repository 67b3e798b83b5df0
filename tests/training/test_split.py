"""The train/validation split: stratified by dataset × label, disjoint, seeded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from imad.corpus_records import read_records
from imad.errors import DatasetError
from training.split import stratified_split

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "corpus_small"


@pytest.fixture(scope="module")
def rows() -> tuple[np.ndarray, tuple[str, ...]]:
    """Labels and datasets of the fixture corpus's 165 labelled records (no features needed)."""
    records = [r for name in ("gqa.jsonl", "pubmedqa.jsonl") for r in read_records(FIXTURE / name)
               if r.label is not None and r.parsed is not None]
    return np.array([int(r.label) for r in records]), tuple(r.dataset for r in records)


def test_split_is_stratified_disjoint_and_seeded(rows):
    labels, datasets = rows
    train, validation, stratify_by = stratified_split(labels, datasets, 0.2, 42)
    assert stratify_by == "dataset × label"
    assert (train.size, validation.size) == (132, 33)
    assert np.intersect1d(train, validation).size == 0
    assert np.array_equal(np.union1d(train, validation), np.arange(165))
    assert abs(labels[validation].mean() - labels.mean()) < 0.03
    assert {datasets[i] for i in validation} == {"gqa", "pubmedqa"}
    again = stratified_split(labels, datasets, 0.2, 42)
    assert np.array_equal(again[1], validation)
    assert not np.array_equal(stratified_split(labels, datasets, 0.2, 1)[1],
                              validation)


def test_split_needs_both_classes():
    with pytest.raises(DatasetError, match="at least 2 right and 2 wrong"):
        stratified_split(np.array([1, 1, 1, 0]), ["a"] * 4, 0.2, 42)
