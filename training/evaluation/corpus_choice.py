"""Which corpus the notebooks train on: the shipped one, checked to be big enough first.

The shipped corpus (`corpus/smollm2-135m-instruct-q4_1`) is generated slowly by the embedded
model. The notebooks' numbers mean something only when it holds enough labelled answers of
both kinds; below that, `notebook_corpus` refuses with a `DatasetError` saying how to build it,
unless the caller names a fallback corpus (a test's synthetic corpus, say), which is then used
and announced as such in the explanation the notebooks print.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from imad.corpus_records import read_records
from imad.errors import DatasetError
from training.config import DEFAULT_CORPUS
from training.corpus_table import REPO_ROOT, corpus_files

MIN_LABELLED = 200
MIN_PER_CLASS = 20
BUILD_COMMAND = "python -m training.corpus --llm local --dataset pubmedqa --dataset gqa"


@dataclass(frozen=True)
class CorpusChoice:
    """The corpus paths to train on and the sentence that says which they are and why."""

    paths: tuple[str, ...]
    is_fallback: bool
    explanation: str


def notebook_corpus(shipped: str | Path = DEFAULT_CORPUS[0], *, fallback: str | Path | None = None,
                    min_labelled: int = MIN_LABELLED,
                    min_per_class: int = MIN_PER_CLASS) -> CorpusChoice:
    """The shipped corpus if it has ≥ `min_labelled` labelled answers and ≥ `min_per_class`
    of each label; otherwise `fallback` (with the reason), or a `DatasetError` without one."""
    path = Path(shipped) if Path(shipped).is_absolute() else REPO_ROOT / shipped
    labels: list[int] = []
    if path.exists():
        labels = [r.label for f in corpus_files([path]) for r in read_records(f) if r.label is not None]
    right, wrong = sum(labels), len(labels) - sum(labels)
    counts = f"{len(labels)} labelled answers ({right} right, {wrong} wrong)"
    if len(labels) >= min_labelled and min(right, wrong) >= min_per_class:
        return CorpusChoice((str(path),), False, f"the shipped corpus {shipped}: {counts}")
    shortfall = (f"the shipped corpus {shipped} has only {counts}, fewer than {min_labelled} "
                 f"labelled or {min_per_class} of a label")
    if fallback is None:
        raise DatasetError(f"{shortfall}; build it with `{BUILD_COMMAND}`")
    return CorpusChoice(
        (str(fallback),), True,
        f"the SYNTHETIC fallback corpus {fallback}, because {shortfall}; numbers below "
        "illustrate the method, they are not results")
