"""Lexical-cue features: hedge, certainty, contrast and negation counts.

A lexicon entry (`features/lexicon.py`) is a word or a multi-word phrase. Entries and text are
compared as sequences of normalised tokens, so a phrase matches across any whitespace and only
on whole tokens ("not" does not match inside "notable"). Matching rules, chosen so that a count
means "number of cue expressions":

- tokens are spaCy tokens, lowercased, with the typographic apostrophe (’) read as ' so that
  "don’t" and "don't" both yield the negator "n't";
- entries are tokenised by the same tokenizer as the text, so "it's possible" in a lexicon file
  becomes `("it", "'s", "possible")`, exactly as in running text;
- scanning left to right, at each position the longest entry that matches wins and the scan
  resumes after it: matches never overlap and "it is possible" counts once, not twice;
- each lexicon is counted on its own: "not certain" counts one hedge (the phrase), one
  negation ("not") and one certainty cue ("certain").
Counting is lexical: "may" the month counts as a hedge. The pipeline has POS tags, but sense
disambiguation would make the counts harder to explain and to reproduce.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from features.lexicon import load_lexicon

if TYPE_CHECKING:
    from spacy.tokens import Doc

APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def normalise_token(token: str) -> str:
    """The form tokens are compared in: lowercase, typographic apostrophes as '."""
    return token.lower().translate(APOSTROPHES)


def cue_tokens(doc: Doc) -> list[str]:
    """The normalised tokens of `doc` that lexicons are matched against.

    Every non-whitespace token takes part, punctuation included, so a phrase never matches
    across a comma ("on the other, hand").
    """
    return [token.lower_.translate(APOSTROPHES) for token in doc if not token.is_space]


@dataclass(frozen=True)
class CompiledLexicon:
    """A lexicon ready for matching: entries as token tuples, indexed by their first token.

    `by_first_token[t]` lists the entries starting with token `t`, longest first, so the
    first one that matches is the longest match.
    """

    name: str
    by_first_token: Mapping[str, tuple[tuple[str, ...], ...]]

    def count(self, tokens: Sequence[str]) -> int:
        """Non-overlapping, longest-first matches of the entries in normalised `tokens`."""
        count = 0
        position = 0
        end = len(tokens)
        while position < end:
            candidates = self.by_first_token.get(tokens[position])
            matched = 0
            if candidates:
                for entry in candidates:
                    size = len(entry)
                    if tuple(tokens[position:position + size]) == entry:
                        matched = size
                        break
            if matched:
                count += 1
                position += matched
            else:
                position += 1
        return count


def compile_lexicon(name: str, entries: Iterable[str],
                    tokenize: Callable[[str], list[str]]) -> CompiledLexicon:
    """Tokenise each entry with `tokenize` (the text's tokenizer) and index it for matching."""
    index: dict[str, set[tuple[str, ...]]] = {}
    for entry in entries:
        tokens = tuple(normalise_token(token) for token in tokenize(entry))
        if tokens:
            index.setdefault(tokens[0], set()).add(tokens)
    ordered = {first: tuple(sorted(group, key=lambda entry: (-len(entry), entry)))
               for first, group in sorted(index.items())}
    return CompiledLexicon(name=name, by_first_token=ordered)


def compile_lexicons(names: Iterable[str],
                     tokenize: Callable[[str], list[str]]) -> dict[str, CompiledLexicon]:
    """The named lexicons (at the versions `LEXICON_VERSIONS` names), compiled with `tokenize`."""
    return {name: compile_lexicon(name, load_lexicon(name), tokenize) for name in names}


CUE_FEATURES: dict[str, str] = {
    "hedge_count": "hedge",
    "certainty_count": "certainty",
    "contrast_count": "contrast",
}
"""Text feature name → lexicon it counts (the negation count is a cross feature)."""


def lexical_features(tokens: Sequence[str],
                     lexicons: Mapping[str, CompiledLexicon]) -> dict[str, float]:
    """`hedge_count`, `certainty_count`, `contrast_count` of one text's normalised tokens."""
    return {feature: float(lexicons[name].count(tokens)) for feature, name in CUE_FEATURES.items()}


def negation_count(tokens: Sequence[str], lexicons: Mapping[str, CompiledLexicon]) -> float:
    """The number of negators in one text's normalised tokens."""
    return float(lexicons["negation"].count(tokens))
