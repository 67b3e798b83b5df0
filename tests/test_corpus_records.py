"""`imad.corpus_records`: the one reader of corpus files. Training (`training.corpus_table`,
`.calibrate`, `.evaluation.responses`) and the runtime (`imad calibrate --corpus`,
`--recalibrate`) read the same records from the same file and fail on a damaged line with the
same `DatasetError`. (The hostile table of damaged lines is tests/hostile/test_hostile_corpus.py.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import imad.corpus_records as corpus_records
from imad.errors import DatasetError
from imad.router import Router
from imad.router.calibration_set import read_answer_scores, read_validation_set
from training.corpus_table import load_corpus

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "corpus_small"
SHIPPED_EVAL = Path(__file__).resolve().parents[1] / "corpus" / "smollm2-135m-instruct-q4_1" / "eval"


def test_training_and_the_runtime_import_the_same_reader():
    import imad.router.calibration_set as runtime
    import training.calibrate
    import training.corpus_table
    import training.evaluation.responses

    assert training.corpus_table.read_records is corpus_records.read_records
    assert training.calibrate.read_records is corpus_records.read_records
    assert training.evaluation.responses.read_records is corpus_records.read_records
    assert runtime.read_corpus is corpus_records.read_corpus


def test_the_shipped_evaluation_answers_read_the_same_through_both(tmp_path):
    """The real corpus of the embedded model: both paths see the same labelled answers."""
    medqa = SHIPPED_EVAL / "medqa.jsonl"
    records = corpus_records.read_corpus([medqa])
    labelled = [r for r in records if r.label is not None and r.parsed is not None]
    router = Router.load("imad-router-v2")
    runtime = read_validation_set(router, [medqa])
    table = load_corpus([medqa], feature_cache=tmp_path, schema_version=router.feature_schema_version)
    assert len(records) == 200 and len(labelled) == table.labels.size == runtime.labels.size
    assert np.array_equal(runtime.labels, table.labels)
    assert np.array_equal(runtime.p, router.predict_proba(table.features))
    assert runtime.mean_call_tokens == pytest.approx(np.mean([r.tokens for r in records]))
    scores = read_answer_scores(router, [medqa])
    assert scores.labels == [r.label for r in records if r.parsed is not None]


def test_a_retried_question_counts_once_with_its_later_answer(tmp_path):
    lines = (FIXTURE / "gqa.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "c.jsonl"
    path.write_text(lines[0] + lines[1] + lines[0].replace('"stop"', '"length"'), encoding="utf-8")
    records = corpus_records.read_records(path)
    assert len(records) == 2 and records[0].finish_reason == "length"


def test_a_damaged_line_is_the_same_error_for_training_and_runtime(tmp_path):
    good = (FIXTURE / "gqa.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[0]
    path = tmp_path / "c.jsonl"
    path.write_text(good + "[1, 2]\n" + good, encoding="utf-8")
    with pytest.raises(DatasetError) as training_error:
        load_corpus([path], feature_cache=None)
    with pytest.raises(DatasetError) as runtime_error:
        read_validation_set(Router.load("imad-router-v2"), [path])
    assert str(training_error.value) == str(runtime_error.value)
    assert "c.jsonl:2: a JSON array where a JSON object" in str(runtime_error.value)


def test_paths_expand_directories_once(tmp_path):
    files = corpus_records.corpus_jsonl_files([FIXTURE, FIXTURE / "gqa.jsonl"])
    assert [f.name for f in files] == sorted(f.name for f in FIXTURE.glob("*.jsonl"))
