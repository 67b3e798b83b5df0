"""The train/validation split of a corpus: stratified, seeded, reproducible.

The router is validated on answers it was not trained on, in the same proportions of dataset
and label; the same labels, groups, fraction and seed always give the same rows, so
`training.evaluation.training_rows` can rebuild a checkpoint's split from what it recorded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from sklearn.model_selection import train_test_split

from imad.errors import DatasetError


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
