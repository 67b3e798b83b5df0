"""Syntax features of a text: entities, dependency depth and part-of-speech counts.

Definitions:
- `entities`: the entity count, defined per schema (`features/entities.py`: v1 the NER's
  spans, v2 proper-noun and number runs) and passed in by the extractor;
- `max_dependency_depth`: the most arcs between a sentence's root and any of its tokens, over
  all sentences; a one-word sentence and an empty text have depth 0. Whitespace tokens are left
  out (spaCy attaches them somewhere, but they carry no syntax);
- `nouns` counts NOUN and PROPN, `verbs` VERB (auxiliaries and modals, POS AUX, are not
  verbs here), `adjectives` ADJ, `adverbs` ADV — the universal POS tags the attribute ruler
  maps from the tagger's fine-grained tags.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc

SYNTAX_FEATURES: tuple[str, ...] = ("entities", "max_dependency_depth", "nouns", "verbs",
                                    "adjectives", "adverbs")

POS_FEATURES: dict[str, tuple[str, ...]] = {
    "nouns": ("NOUN", "PROPN"),
    "verbs": ("VERB",),
    "adjectives": ("ADJ",),
    "adverbs": ("ADV",),
}


def max_dependency_depth(doc: Doc) -> int:
    """The largest number of arcs from a token up to its sentence root (see module docstring).

    Each token's depth is computed once and reused by its dependents, so the cost is linear in
    the number of tokens. A malformed head chain (a cycle; spaCy never produces one) stops the
    walk instead of looping.
    """
    heads = [token.head.i for token in doc]
    depths: list[int] = [-1] * len(heads)
    deepest = 0
    for start, token in enumerate(doc):
        path: list[int] = []
        node = start
        while depths[node] < 0 and heads[node] != node and len(path) <= len(heads):
            path.append(node)
            node = heads[node]
        if depths[node] < 0:  # the root, or a cycle cut short
            depths[node] = 0
        for offset, child in enumerate(reversed(path), start=1):
            depths[child] = depths[node] + offset
        if not token.is_space:
            deepest = max(deepest, depths[start])
    return deepest


def pos_counts(doc: Doc) -> dict[str, float]:
    """`nouns`, `verbs`, `adjectives`, `adverbs` of one parsed text."""
    counts: dict[str, int] = {}
    for token in doc:
        counts[token.pos_] = counts.get(token.pos_, 0) + 1
    return {feature: float(sum(counts.get(tag, 0) for tag in tags))
            for feature, tags in POS_FEATURES.items()}


def syntax_features(doc: Doc, entities: int) -> dict[str, float]:
    """`entities` (given), `max_dependency_depth` and the four POS counts of one parsed text."""
    features = {
        "entities": float(entities),
        "max_dependency_depth": float(max_dependency_depth(doc)),
    }
    features.update(pos_counts(doc))
    return features
