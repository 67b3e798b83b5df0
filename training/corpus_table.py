"""A corpus as training rows: its files read, labelled records kept, featurised.

`load_corpus` reads corpus JSONL files (`imad.corpus_records`, the reader the runtime uses
too), keeps the labelled records (parse failures are skipped but counted in the data summary),
and extracts the 41 features of each (question text, parsed self-critique) through the on-disk
cache of `training.feature_cache`. The summary (counts per dataset, models, prompt versions, confidence
sources, file hashes) is what `training.fit` records in the checkpoint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import features
from imad.corpus_records import CorpusRecord, corpus_jsonl_files, read_records
from imad.critique.schema import CritiqueResponse
from imad.errors import DatasetError
from training.feature_cache import extract_features

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class CorpusTable:
    """The labelled rows of a corpus as arrays, plus the summary recorded in the checkpoint."""

    features: np.ndarray
    """Raw (unscaled) feature matrix, float64, shape (n, 41), columns in FEATURE_NAMES order."""
    labels: np.ndarray
    """1 ⇔ the kept answer is correct; int64, shape (n,)."""
    datasets: tuple[str, ...]
    question_ids: tuple[str, ...]
    task_types: tuple[str, ...] = ()
    """Each row's question type (yes_no_maybe, multiple_choice, …): the scoreboard's groups."""
    summary: dict[str, Any] = field(default_factory=dict)


def corpus_files(paths: Sequence[str | Path]) -> list[Path]:
    """The JSONL files named by `paths` (directories expand to their sorted *.jsonl files).

    A relative path missing from the working directory is looked up in the repository root,
    so `python -m training.fit` finds the shipped corpus from anywhere inside the checkout.
    """
    return corpus_jsonl_files(
        paths, search_root=REPO_ROOT,
        missing_hint="; build a corpus with `python -m training.corpus --llm SPEC --dataset "
                     "pubmedqa --dataset gqa` or pass --corpus PATH")


def load_corpus(
    paths: Sequence[str | Path],
    *,
    feature_cache: str | Path | None = None,
    progress: bool = False,
    schema_version: int = features.FEATURE_SCHEMA_VERSION,
) -> CorpusTable:
    """Read, filter and featurise a corpus (see the module docstring).

    `schema_version` is the feature schema to extract: a new router's (default: the newest),
    or the one an existing router records (`router.feature_schema_version`) to score it.
    """
    files = corpus_files(paths)
    records_by_file = [(file, read_records(file)) for file in files]
    records = [record for _, file_records in records_by_file for record in file_records]
    labelled = [r for r in records if r.label is not None and r.parsed is not None]
    if not labelled:
        raise DatasetError(
            f"no labelled records in {', '.join(map(str, files))} (all {len(records)} are parse "
            "failures or the files are empty)"
        )
    questions = [str(r.question["text"]) for r in labelled]
    responses = [CritiqueResponse.from_dict(r.parsed) for r in labelled]
    matrix = extract_features(questions, responses, cache=feature_cache, progress=progress,
                              schema_version=schema_version)
    return CorpusTable(
        features=matrix,
        labels=np.array([int(r.label) for r in labelled], dtype=np.int64),
        datasets=tuple(r.dataset for r in labelled),
        question_ids=tuple(r.question_id for r in labelled),
        task_types=tuple(str(r.question.get("task_type", "unknown")) for r in labelled),
        summary=summarize_corpus(records_by_file),
    )


def summarize_corpus(records_by_file: Sequence[tuple[Path, list[CorpusRecord]]]) -> dict[str, Any]:
    """Counts per dataset, models, prompt versions, confidence sources, and file hashes."""
    records = [record for _, file_records in records_by_file for record in file_records]

    def counts(rows: list[CorpusRecord]) -> dict[str, Any]:
        labels = [r.label for r in rows if r.label is not None and r.parsed is not None]
        return {
            "records": len(rows),
            "labelled": len(labels),
            "parse_failures": len(rows) - len(labels),
            "positive_rate": float(np.mean(labels)) if labels else None,
        }

    by_dataset: dict[str, list[CorpusRecord]] = {}
    for record in records:
        by_dataset.setdefault(record.dataset, []).append(record)
    return {
        **counts(records),
        "datasets": {name: counts(rows) for name, rows in sorted(by_dataset.items())},
        "model_ids": sorted({r.model_id for r in records}),
        "prompt_versions": sorted({r.prompt_version for r in records}),
        "confidence_sources": sorted({r.confidence_source for r in records}),
        "modes": sorted({r.mode for r in records}),
        "files": [
            {
                "path": _display_path(file),
                "sha256": hashlib.sha256(file.read_bytes()).hexdigest(),
                "records": len(file_records),
            }
            for file, file_records in records_by_file
        ],
    }


def _display_path(path: Path) -> str:
    resolved = path.resolve()
    for base in (Path.cwd().resolve(), REPO_ROOT):
        if resolved.is_relative_to(base):
            return resolved.relative_to(base).as_posix()
    return resolved.as_posix()
