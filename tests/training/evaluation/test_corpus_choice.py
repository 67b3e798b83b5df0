"""The notebooks' corpus: the shipped one when big enough, else a named fallback or an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from imad.corpus_records import read_records
from imad.errors import DatasetError
from training.config import DEFAULT_CORPUS
from training.corpus_table import REPO_ROOT
from training.evaluation.corpus_choice import BUILD_COMMAND, notebook_corpus

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "corpus_small"


def small_corpus(folder: Path, lines: int) -> Path:
    """A corpus folder holding the first `lines` records of the fixture's PubMedQA file."""
    folder.mkdir()
    text = (FIXTURE / "pubmedqa.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "pubmedqa.jsonl").write_text("".join(text[:lines]), encoding="utf-8")
    return folder


def test_the_shipped_corpus_is_chosen():
    files = sorted((REPO_ROOT / DEFAULT_CORPUS[0]).glob("*.jsonl"))
    labels = [r.label for path in files for r in read_records(path) if r.label is not None]
    choice = notebook_corpus()
    assert not choice.is_fallback and choice.paths == (str(REPO_ROOT / DEFAULT_CORPUS[0]),)
    assert choice.explanation == (f"the shipped corpus {DEFAULT_CORPUS[0]}: {len(labels)} labelled "
                                  f"answers ({sum(labels)} right, {labels.count(0)} wrong)")
    assert len(labels) >= 200


def test_a_small_corpus_uses_the_named_fallback(tmp_path):
    shipped = small_corpus(tmp_path / "shipped", 10)
    labels = [r.label for r in read_records(shipped / "pubmedqa.jsonl") if r.label is not None]
    choice = notebook_corpus(shipped, fallback=FIXTURE)
    assert choice.is_fallback and choice.paths == (str(FIXTURE),)
    assert f"the SYNTHETIC fallback corpus {FIXTURE}" in choice.explanation
    assert f"has only {len(labels)} labelled answers" in choice.explanation


def test_a_small_corpus_without_fallback_says_how_to_build_one(tmp_path):
    shipped = small_corpus(tmp_path / "shipped", 10)
    with pytest.raises(DatasetError, match="fewer than 200 labelled") as caught:
        notebook_corpus(shipped)
    assert BUILD_COMMAND in str(caught.value)
    with pytest.raises(DatasetError, match="has only 0 labelled answers"):
        notebook_corpus(tmp_path / "absent")


def test_each_label_needs_its_minimum():
    labels = [r.label for path in FIXTURE.glob("*.jsonl") for r in read_records(path)
              if r.label is not None]
    wrong = labels.count(0)
    assert not notebook_corpus(FIXTURE, min_labelled=10, min_per_class=wrong).is_fallback
    with pytest.raises(DatasetError, match=f"{wrong} wrong"):
        notebook_corpus(FIXTURE, min_labelled=10, min_per_class=wrong + 1)
