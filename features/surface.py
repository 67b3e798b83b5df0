"""Surface features of a text: tokens, sentences, average sentence length.

Definitions, shared by the question, reasoning and critique:
- a *token* is a spaCy token that is neither whitespace nor punctuation, i.e. a word, a
  number or a symbol; contractions are split the spaCy way ("don't" → "do" + "n't", 2 tokens)
  and "%" counts as punctuation;
- a *sentence* is a spaCy sentence (from the dependency parse) holding at least one token, so a
  text of only punctuation or whitespace has 0 sentences;
- `avg_sentence_len` = tokens / sentences, and 0 for a text with no sentence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

SURFACE_FEATURES: tuple[str, ...] = ("tokens", "sentences", "avg_sentence_len")


def is_word(token: Token) -> bool:
    """Whether `token` counts as a token for the features: not whitespace, not punctuation."""
    return not (token.is_space or token.is_punct)


def word_tokens(doc: Doc) -> list[Token]:
    """The tokens of `doc` that count (see `is_word`)."""
    return [token for token in doc if is_word(token)]


def count_sentences(doc: Doc) -> int:
    """Sentences of `doc` holding at least one counted token."""
    return sum(1 for sentence in doc.sents if any(is_word(token) for token in sentence))


def surface_features(doc: Doc) -> dict[str, float]:
    """`tokens`, `sentences` and `avg_sentence_len` of one parsed text."""
    tokens = len(word_tokens(doc))
    sentences = count_sentences(doc) if tokens else 0
    return {
        "tokens": float(tokens),
        "sentences": float(sentences),
        "avg_sentence_len": tokens / sentences if sentences else 0.0,
    }
