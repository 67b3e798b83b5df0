"""What counts as an entity in `q_entities`, `r_entities`, `c_entities`, per schema.

- v1, `ner_entities`: the spans the pipeline's statistical NER finds (`len(doc.ents)`: people,
  places, organisations, dates, quantities, cardinals…). The NER is about half of the
  pipeline's time, for 3 of the 41 features.
- v2, `tagged_entities`: spans read off the part-of-speech tags the other features need
  anyway — each maximal run of consecutive proper nouns (PROPN: "New York", "Paris") and each
  maximal run of consecutive numbers (NUM: "eight", "3.5", "1,000") is one entity. It keeps
  the meaning "how many specific names and quantities the text commits to" at no extra cost.
  Where the two differ: a nationality or other proper adjective ("French", tagged ADJ) is not
  a v2 entity; a proper noun the NER misses ("Aspirin" tagged PROPN) is one; a date "May 2020"
  is one NER span but two v2 runs (a proper noun, then a number).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc

ENTITY_TAGS: frozenset[str] = frozenset({"PROPN", "NUM"})
"""Universal POS tags whose runs count as v2 entities."""


def ner_entities(doc: Doc) -> int:
    """Schema v1: the named-entity spans of `doc` (needs the NER component)."""
    return len(doc.ents)


def tagged_entities(doc: Doc) -> int:
    """Schema v2: maximal runs of consecutive PROPN tokens plus runs of NUM tokens."""
    count = 0
    previous = ""
    for token in doc:
        pos = token.pos_
        if pos in ENTITY_TAGS and pos != previous:
            count += 1
        previous = pos
    return count


EntityCounter = Callable[["Doc"], int]
