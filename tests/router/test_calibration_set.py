"""`imad.router.calibration_set`: the run-time reader behind `imad calibrate --corpus` scores a
router on the feature schema it was trained on, and names bad corpus paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from imad.errors import DatasetError
from imad.router import Router
from imad.router.calibration_set import corpus_jsonl_files, read_validation_set
from training.corpus_table import load_corpus

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "corpus_small" / "pubmedqa.jsonl"


@pytest.mark.parametrize("name", ["imad-router-v1"])
def test_scores_equal_the_training_reader_on_the_routers_own_schema(name, tmp_path):
    router = Router.load(name)
    validation = read_validation_set(router, [FIXTURE])
    table = load_corpus([FIXTURE], feature_cache=tmp_path, schema_version=router.feature_schema_version)
    assert np.array_equal(validation.p, router.predict_proba(table.features))
    assert np.array_equal(validation.labels, table.labels)


def test_paths_expand_once_and_missing_ones_are_named(tmp_path):
    (tmp_path / "a.jsonl").write_text("", encoding="utf-8")
    assert corpus_jsonl_files([tmp_path, tmp_path / "a.jsonl"]) == [tmp_path / "a.jsonl"]
    with pytest.raises(DatasetError, match="corpus path .*nope.jsonl does not exist; hint"):
        corpus_jsonl_files([tmp_path / "nope.jsonl"], missing_hint="; hint")
    with pytest.raises(DatasetError, match="holds no .jsonl files"):
        corpus_jsonl_files([tmp_path / "empty"] if (tmp_path / "empty").mkdir() is None else [])
