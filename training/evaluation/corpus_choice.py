"""Which corpus the notebooks train on: the shipped one when it is big enough, else the fixture.

The shipped corpus (`corpus/smollm2-135m-instruct-q4_1`) is generated slowly by the embedded
model; until it holds enough labelled answers of both kinds, the notebooks fall back to the
synthetic fixture corpus (`tests/fixtures/corpus_small`) and say so in their output, so they
always run top to bottom in CI.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from training.config import DEFAULT_CORPUS
from training.corpus_store import read_records
from training.datamodule import REPO_ROOT, corpus_files

FIXTURE_CORPUS = REPO_ROOT / "tests" / "fixtures" / "corpus_small"
MIN_LABELLED = 200
MIN_PER_CLASS = 20


@dataclass(frozen=True)
class CorpusChoice:
    paths: tuple[str, ...]
    is_fixture: bool
    explanation: str


def notebook_corpus(shipped: str = DEFAULT_CORPUS[0], min_labelled: int = MIN_LABELLED,
                    min_per_class: int = MIN_PER_CLASS) -> CorpusChoice:
    """The shipped corpus if it has ≥ `min_labelled` labelled answers and ≥ `min_per_class`
    of each label; otherwise the synthetic fixture corpus (with the reason)."""
    path = Path(shipped) if Path(shipped).is_absolute() else REPO_ROOT / shipped
    labels: list[int] = []
    if path.exists():
        labels = [r.label for f in corpus_files([path]) for r in read_records(f) if r.label is not None]
    right, wrong = sum(labels), len(labels) - sum(labels)
    counts = f"{len(labels)} labelled answers ({right} right, {wrong} wrong)"
    if len(labels) >= min_labelled and min(right, wrong) >= min_per_class:
        return CorpusChoice((str(path),), False, f"the shipped corpus {shipped}: {counts}")
    return CorpusChoice(
        (str(FIXTURE_CORPUS),), True,
        f"the SYNTHETIC fixture corpus tests/fixtures/corpus_small, because the shipped corpus "
        f"{shipped} has only {counts}, fewer than {min_labelled} labelled or {min_per_class} of "
        "a label; numbers below illustrate the method, they are not results")
