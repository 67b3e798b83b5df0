"""The router's boundary with `features`: extraction in imad's error hierarchy.

`features` imports nothing from `imad`, so it raises its own `features.errors` types. Every
imad caller of the extractor — `Router.score`, `imad features`, training's corpus loader —
goes through this module, which maps them to imad's `FeatureError` and
`MissingDependencyError` (same messages), so an entry point reports `error: …` for them like
for any other imad error. It also fixes the one rule a caller must not get wrong: features are
extracted with the schema the router was trained on (`schema_version`, recorded in every
checkpoint), never silently with the newest one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

import features
from features import errors as feature_errors
from imad.errors import FeatureError, MissingDependencyError

Featurizer = Callable[[str, features.CritiqueFields, int], np.ndarray]
"""What `Router.score` extracts a response's vector with: (question text, response, schema
version) → float64 array of shape (n_features,). `extract` is the default."""


@contextmanager
def imad_errors() -> Iterator[None]:
    """Re-raise the feature package's errors as imad's, keeping the message and the cause."""
    try:
        yield
    except feature_errors.MissingDependencyError as error:
        raise MissingDependencyError(error.package, error.install, error.purpose) from error
    except feature_errors.FeatureError as error:
        raise FeatureError(str(error)) from error


def extract(question: str, response: features.CritiqueFields, schema_version: int) -> np.ndarray:
    """The 41 features (float64, shape (41,)) of one response under schema `schema_version`."""
    with imad_errors():
        return features.extract(question, response, schema_version=schema_version)


def extract_batch(questions: Sequence[str], responses: Sequence[features.CritiqueFields],
                  schema_version: int, *, batch_size: int = 64,
                  n_process: int = 1) -> np.ndarray:
    """The (n, 41) feature matrix of the pairs under schema `schema_version`."""
    with imad_errors():
        return features.extract_batch(questions, responses, schema_version=schema_version,
                                      batch_size=batch_size, n_process=n_process)
