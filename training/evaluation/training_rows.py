"""The router's own training corpus and train/validation split, rebuilt from its checkpoint.

`training.fit` records in config.json the corpus files it read (path, sha256, records) and the
split settings (validation fraction, split seed). `router_training_rows` reads those files
again (or the ones the caller names), featurises them, and redoes the same stratified split,
so that:
- `training.evaluate` fits the logistic-regression baseline on exactly the rows the router
  was trained on;
- `imad calibrate` chooses τ on the router's validation rows by default.
`provenance["unchanged"]` says whether the files are exactly the recorded ones (same sha256s;
if a corpus grew after training, the split, and so the rows, differ from the router's), and is
None when the checkpoint records no files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from imad.constraints import show
from imad.errors import CheckpointError, DatasetError
from imad.router import Router
from training.corpus_table import corpus_files, load_corpus
from training.split import stratified_split

DEFAULT_VALIDATION_FRACTION = 0.2
DEFAULT_SPLIT_SEED = 42


@dataclass(frozen=True)
class TrainingRows:
    """Raw features and labels of the router's training and validation rows."""

    train_features: np.ndarray
    train_labels: np.ndarray
    validation_features: np.ndarray
    validation_labels: np.ndarray
    provenance: dict[str, Any]


def recorded_corpus(router: Router) -> list[str]:
    """The corpus files the checkpoint says the router was trained on (may be empty)."""
    return [str(entry["path"]) for entry in _recorded_files(router)
            if isinstance(entry, dict) and isinstance(entry.get("path"), str)]


def recorded_split(router: Router) -> tuple[float, int]:
    """The validation fraction and split seed the checkpoint's training record holds (defaults
    when absent); `CheckpointError` naming the value when it is damaged, before any work."""
    training = router.metadata.get("training", {})
    settings = training.get("config", {}) if isinstance(training, dict) else None
    if not isinstance(settings, dict):
        raise CheckpointError(f"router {router.name!r}: the training record's config must be a "
                              f"JSON object, got {type(settings or training).__name__}")
    fraction = settings.get("validation_fraction", DEFAULT_VALIDATION_FRACTION)
    # compared as given: NaN fails it, and a 400-digit int is never converted to a float
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 < fraction < 1.0:
        raise CheckpointError(f"router {router.name!r}: training.config.validation_fraction must "
                              f"be a number in (0, 1), got {show(fraction)}")
    seed = settings.get("split_seed", DEFAULT_SPLIT_SEED)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise CheckpointError(f"router {router.name!r}: training.config.split_seed must be an "
                              f"integer in [0, 2**32), got {show(seed)}")
    return float(fraction), seed


def _recorded_files(router: Router) -> list[Any]:
    data = router.metadata.get("data", {})
    files = data.get("files", []) if isinstance(data, dict) else []
    return files if isinstance(files, list) else []


def router_training_rows(router: Router, corpus: Sequence[str] = (), *,
                         feature_cache: str | Path | None = None) -> TrainingRows:
    """The router's training/validation rows (module docstring); `corpus` overrides the files."""
    fraction, seed = recorded_split(router)  # damage refused before any corpus is read
    paths = list(corpus) or recorded_corpus(router)
    if not paths:
        raise DatasetError(f"router {router.name!r} records no training corpus; name it with "
                           "--train-corpus (the files it was trained on)")
    table = load_corpus(paths, feature_cache=feature_cache,
                        schema_version=router.feature_schema_version)
    train, validation, stratify_by = stratified_split(table.labels, table.datasets, fraction, seed)
    recorded = {entry.get("sha256") for entry in _recorded_files(router) if isinstance(entry, dict)}
    hashes = [hashlib.sha256(file.read_bytes()).hexdigest() for file in corpus_files(paths)]
    provenance = {
        "files": [str(p) for p in paths],
        "source": "--train-corpus" if corpus else "recorded in the checkpoint",
        "unchanged": None if not recorded - {None} else set(hashes) == recorded,
        "labelled_rows": int(table.labels.size),
        "train_rows": int(train.size),
        "validation_rows": int(validation.size),
        "split": {"validation_fraction": fraction, "seed": seed, "stratify": stratify_by},
        "train_positive_rate": float(table.labels[train].mean()),
        "datasets": sorted(set(table.datasets)),
    }
    return TrainingRows(table.features[train], table.labels[train], table.features[validation],
                        table.labels[validation], provenance)
