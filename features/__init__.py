"""The 41 interpretable features of a self-critique response (SPEC §4, schema v1).

    from features import FEATURE_NAMES, FEATURE_SCHEMA_HASH, extract, extract_batch
    vector = extract(question_text, critique_response)          # float64, shape (41,)
    matrix = extract_batch(question_texts, critique_responses)  # float64, shape (n, 41)

Features are pure functions of the texts, computed with a pinned spaCy English pipeline
(`features/pipeline.py`), textstat readability (`features/readability.py`) and versioned
lexicons (`features/lexicon.py`, data in `features/lexicons/`). Importing this package loads
none of them (only numpy): the pipeline, textstat and the lexicons load on the first
`extract` call.
"""

from features.extractor import extract, extract_batch
from features.names import (
    FEATURE_NAMES,
    FEATURE_SCHEMA_HASH,
    FEATURE_SCHEMA_VERSION,
    N_FEATURES,
)

__all__ = [
    "FEATURE_NAMES",
    "FEATURE_SCHEMA_HASH",
    "FEATURE_SCHEMA_VERSION",
    "N_FEATURES",
    "extract",
    "extract_batch",
]
