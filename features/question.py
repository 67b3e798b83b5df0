"""Question features: size, entities and question type.

The question type is a one-hot over `what`, `why`, `how`, other wh-words (which, who, whom,
whose, when, where) and yes/no; it is all zeros when none applies (an imperative such as
"Solve for x."). It is read from the words, not from the parse, so it is exact and cheap:

1. the *question sentence* is the last sentence ending in "?" (GSM8K and MedQA put a story or
   a vignette before the question), else the whole text;
2. if its first word is a wh-word, that word decides ("How many…" → how);
3. else if its first word is an auxiliary or modal ("Is…", "Do…", "Can…") → yes/no;
4. else the first wh-word anywhere in it decides ("In adults, what is…" → what);
5. else, if it ends in "?" → yes/no ("Aspirin for stroke prevention?"); otherwise no type.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from features.surface import word_tokens

if TYPE_CHECKING:
    from spacy.tokens import Doc

QUESTION_TYPES: tuple[str, ...] = ("q_is_what", "q_is_why", "q_is_how", "q_is_wh_other",
                                   "q_is_yes_no")

WH_WORDS: dict[str, str] = {
    "what": "q_is_what",
    "why": "q_is_why",
    "how": "q_is_how",
    "which": "q_is_wh_other",
    "who": "q_is_wh_other",
    "whom": "q_is_wh_other",
    "whose": "q_is_wh_other",
    "when": "q_is_wh_other",
    "where": "q_is_wh_other",
}

YES_NO_OPENERS: frozenset[str] = frozenset({
    "am", "is", "are", "was", "were", "be",
    "do", "does", "did",
    "have", "has", "had",
    "can", "could", "will", "would", "shall", "should", "may", "might", "must",
    # negative contractions, as the word pattern splits them ("isn't" → "isn", "t")
    "isn", "aren", "wasn", "weren", "don", "doesn", "didn", "haven", "hasn", "hadn",
    "cannot", "couldn", "won", "wouldn", "shan", "shouldn", "mightn", "mustn",
})

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[^\W\d_]+")


def question_sentence(text: str) -> str:
    """The last sentence of `text` that ends in "?", else the whole (stripped) text."""
    sentences = [part.strip() for part in _SENTENCE_BREAK.split(text.strip())]
    asked = [sentence for sentence in sentences if sentence.endswith("?")]
    return asked[-1] if asked else text.strip()


def question_type(text: str) -> str | None:
    """The question-type feature name that is 1 for `text`, or None (see the module rules)."""
    sentence = question_sentence(text)
    words = _WORD.findall(sentence.lower())
    if not words:
        return None
    first = words[0]
    if first in WH_WORDS:
        return WH_WORDS[first]
    if first in YES_NO_OPENERS:
        return "q_is_yes_no"
    for word in words[1:]:
        if word in WH_WORDS:
            return WH_WORDS[word]
    return "q_is_yes_no" if sentence.endswith("?") else None


def question_features(text: str, doc: Doc, entities: int) -> dict[str, float]:
    """The 7 question features of `text`, whose spaCy parse is `doc` and entity count
    `entities` (counted the way the schema defines, `features/entities.py`)."""
    kind = question_type(text)
    features = {
        "q_tokens": float(len(word_tokens(doc))),
        "q_entities": float(entities),
    }
    features.update({name: float(name == kind) for name in QUESTION_TYPES})
    return features
