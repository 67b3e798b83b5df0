"""The ordered names of the 41 router features and their hash per schema.

The order is the column order of every feature matrix, of the router's scaler and of its first
layer, so it is part of each checkpoint: a schema hash fingerprints the schema version together
with the ordered names, and a checkpoint whose hash is not one of `FEATURE_SCHEMA_HASHES` was
trained on other columns. Any change to a name, to the order, or to how a feature is computed
needs a new schema version; tests pin the hashes so an accidental edit fails loudly.

Two schemas, same 41 names in the same order (`features/extractor.py` has one extractor each):
- v1: entities from the pipeline's statistical NER;
- v2 (the default, `FEATURE_SCHEMA_VERSION`): entities counted from tagger spans (proper-noun
  and number runs, `features/entities.py`) and a pipeline without the NER — about twice as
  fast; every other feature has v1's definition.
A v1 checkpoint keeps working: the router extracts with the schema its checkpoint records.

This module imports nothing heavy: `import features` stays cheap until `extract` is called.
"""

from __future__ import annotations

import hashlib
import json

SCHEMA_VERSIONS: tuple[int, ...] = (1, 2)
"""Every feature schema this package can compute, oldest first."""

FEATURE_SCHEMA_VERSION = 2
"""The schema `features.extract` computes unless told otherwise (the newest)."""

QUESTION_FEATURES: tuple[str, ...] = (
    "q_tokens",
    "q_entities",
    "q_is_what",
    "q_is_why",
    "q_is_how",
    "q_is_wh_other",
    "q_is_yes_no",
)
"""Question group (7): size, named entities and a question-type one-hot (all zero: no type)."""

TEXT_FEATURES: tuple[str, ...] = (
    "tokens",
    "sentences",
    "avg_sentence_len",
    "entities",
    "flesch_reading_ease",
    "coleman_liau_index",
    "max_dependency_depth",
    "nouns",
    "verbs",
    "adjectives",
    "adverbs",
    "hedge_count",
    "certainty_count",
    "contrast_count",
)
"""The 14 features computed for the initial reasoning (prefix `r_`) and the critique (`c_`)."""

REASONING_PREFIX = "r_"
CRITIQUE_PREFIX = "c_"

CROSS_FEATURES: tuple[str, ...] = (
    "conf_initial",
    "conf_critique",
    "conf_gap",
    "answer_changed",
    "length_ratio",
    "c_negations",
)
"""Cross group (6): the two confidences, their gap, the answer flip, C/R length, C negations."""

FEATURE_NAMES: tuple[str, ...] = (
    *QUESTION_FEATURES,
    *(REASONING_PREFIX + name for name in TEXT_FEATURES),
    *(CRITIQUE_PREFIX + name for name in TEXT_FEATURES),
    *CROSS_FEATURES,
)
N_FEATURES = len(FEATURE_NAMES)


def schema_hash(version: int, names: tuple[str, ...] | list[str]) -> str:
    """The sha256 (hex) of a feature schema: its version and its ordered names.

    The hashed bytes are the compact JSON `{"names":[...],"version":N}` (UTF-8, sorted keys),
    an unambiguous encoding that any other tool can reproduce.
    """
    payload = json.dumps({"names": list(names), "version": version}, sort_keys=True,
                         separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


FEATURE_SCHEMA_HASHES: dict[int, str] = {
    version: schema_hash(version, FEATURE_NAMES) for version in SCHEMA_VERSIONS
}
"""The hash of each schema this package computes (the names are the same; the versions not)."""

FEATURE_SCHEMA_HASH = FEATURE_SCHEMA_HASHES[FEATURE_SCHEMA_VERSION]
