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

from imad.errors import DatasetError
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
    return list(router.config.record.corpus_paths)


def router_training_rows(router: Router, corpus: Sequence[str] = (), *,
                         feature_cache: str | Path | None = None) -> TrainingRows:
    """The router's training/validation rows (module docstring); `corpus` overrides the files."""
    paths = list(corpus) or recorded_corpus(router)
    if not paths:
        raise DatasetError(f"router {router.name!r} records no training corpus; name it with "
                           "--train-corpus (the files it was trained on)")
    table = load_corpus(paths, feature_cache=feature_cache,
                        schema_version=router.feature_schema_version)
    settings = router.config.record.fit_settings
    fraction = float(DEFAULT_VALIDATION_FRACTION if settings.validation_fraction is None
                     else settings.validation_fraction)
    seed = DEFAULT_SPLIT_SEED if settings.split_seed is None else settings.split_seed
    train, validation, stratify_by = stratified_split(table.labels, table.datasets, fraction, seed)
    recorded = router.config.record.corpus_hashes
    hashes = [hashlib.sha256(file.read_bytes()).hexdigest() for file in corpus_files(paths)]
    provenance = {
        "files": [str(p) for p in paths],
        "source": "--train-corpus" if corpus else "recorded in the checkpoint",
        "unchanged": None if not recorded else set(hashes) == recorded,
        "labelled_rows": int(table.labels.size),
        "train_rows": int(train.size),
        "validation_rows": int(validation.size),
        "split": {"validation_fraction": fraction, "seed": seed, "stratify": stratify_by},
        "train_positive_rate": float(table.labels[train].mean()),
        "datasets": sorted(set(table.datasets)),
    }
    return TrainingRows(table.features[train], table.labels[train], table.features[validation],
                        table.labels[validation], provenance)
