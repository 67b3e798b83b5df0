"""Training batches of a corpus: split, train-only scaler, Lightning DataLoaders.

`CorpusDataModule` splits the rows of a `CorpusTable` 80/20, stratified by dataset × label
(seeded, `training.split`), fits a StandardScaler on the training rows only, and serves
(scaled features, raw conf_initial, label) batches. The scaling is the same numpy expression
the runtime `Router` applies, so a training row and the same row scored in production see
identical inputs.

The corpus reading (`training.corpus_table`) and the split used to live here; their names are
still importable from this module, where `training.fit` and `training.calibrate` import them.
"""

from __future__ import annotations

import lightning as L
import numpy as np
import torch
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset

import features
from imad.router.router import CONFIDENCE_FEATURE
from training.corpus_table import REPO_ROOT, CorpusTable, corpus_files, load_corpus
from training.split import stratified_split

__all__ = ["REPO_ROOT", "CorpusDataModule", "CorpusTable", "corpus_files", "load_corpus",
           "stratified_split"]


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
