"""The 41 interpretable features of a self-critique response.

    from features import FEATURE_NAMES, FEATURE_SCHEMA_HASH, extract, extract_batch
    vector = extract(question_text, critique_response)          # float64, shape (41,)
    matrix = extract_batch(question_texts, critique_responses)  # float64, shape (n, 41)
    v1 = extract(question_text, critique_response, schema_version=1)  # a v1 router's input

Features are pure functions of the texts, computed with a pinned spaCy English pipeline
(`features/pipeline.py`), textstat readability (`features/readability.py`) and versioned
lexicons (`features/lexicon.py`, data in `features/lexicons/`). Two schemas share the 41 names
and differ in how entities are counted (`features/entities.py`); v2, the default, is about
twice as fast. The package imports nothing from `imad`: a response is anything with
the fields `features.response.CritiqueFields` lists, and its errors are its own
(`features.errors`). Importing it loads none of the heavy parts (only numpy): the pipeline,
textstat and the lexicons load on the first `extract` call.
"""

from features.errors import FeatureError, MissingDependencyError
from features.extractor import Extractor, extract, extract_batch, extractor_for
from features.names import (
    FEATURE_NAMES,
    FEATURE_SCHEMA_HASH,
    FEATURE_SCHEMA_HASHES,
    FEATURE_SCHEMA_VERSION,
    N_FEATURES,
    SCHEMA_VERSIONS,
)
from features.response import CritiqueFields

__all__ = [
    "FEATURE_NAMES",
    "FEATURE_SCHEMA_HASH",
    "FEATURE_SCHEMA_HASHES",
    "FEATURE_SCHEMA_VERSION",
    "N_FEATURES",
    "SCHEMA_VERSIONS",
    "CritiqueFields",
    "Extractor",
    "FeatureError",
    "MissingDependencyError",
    "extract",
    "extract_batch",
    "extractor_for",
]
