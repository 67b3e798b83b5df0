"""Schema v2's part-of-speech step: the pipeline's own attribute-ruler POS rules as a lookup.

In `en_core_web_sm` the tagger assigns fine-grained tags (NN, VBZ…) and the attribute ruler
maps them to the universal POS tags the features count (NOUN, VERB, AUX…): 179 rules, each a
token pattern (TAG, LOWER, DEP, IS_SPACE, with IN / NOT_IN sets) and the attributes it writes,
applied in order so that a later rule overrides an earlier one ("is"/VBZ → AUX over
VBZ → VERB). spaCy applies them by running a Matcher and then a Python loop that builds a Span
and parses a morphology string per match — about a quarter of v2's time for a result the
features read one attribute of.

`PosRules` compiles the rules that write POS, read from the installed pipeline at load time
(nothing is copied into this repository), and for each token takes the POS of the
highest-ordered rule whose pattern matches. The matching semantics are the Matcher's for these
patterns, so every token gets the POS the genuine ruler gives it — a test compares them
token by token on real responses. A rule this compiler does not understand (another key or
operator, e.g. after a pipeline upgrade) is refused with a FeatureError instead of guessed.
Lemmas and morphology, which the ruler also writes, are left unset: no feature reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from features.errors import FeatureError

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

TOKEN_ATTRIBUTES: dict[str, str] = {
    "TAG": "tag_",
    "LOWER": "lower_",
    "DEP": "dep_",
    "ORTH": "text",
    "TEXT": "text",
    "IS_SPACE": "is_space",
}
"""Matcher pattern keys the compiler understands → the Token attribute each compares."""

COMPONENT_NAME = "imad_pos_rules"
RULER_NAME = "attribute_ruler"


@dataclass(frozen=True)
class Condition:
    """One key of a Matcher token pattern: `attribute` equals, is in, or is not in `value`."""

    attribute: str
    operator: str  # "==", "in" or "not in"
    value: Any

    def holds(self, actual: object) -> bool:
        if self.operator == "==":
            return actual == self.value
        if self.operator == "in":
            return actual in self.value
        return actual not in self.value


@dataclass(frozen=True)
class PosRule:
    """One attribute-ruler rule that writes POS: alternative patterns, the token it sets."""

    order: int
    patterns: tuple[tuple[tuple[Condition, ...], ...], ...]
    index: int
    pos: str

    def matches(self, columns: Mapping[str, Sequence[object]], position: int, size: int) -> bool:
        """Whether one of the patterns matches with its `index`-th token at `position`."""
        start = position - self.index
        for pattern in self.patterns:
            if start < 0 or start + len(pattern) > size:
                continue
            if all_hold(pattern, columns, start):
                return True
        return False


def all_hold(pattern: tuple[tuple[Condition, ...], ...], columns: Mapping[str, Sequence[object]],
             start: int) -> bool:
    """Whether every token condition of `pattern` holds for the tokens from `start` on."""
    # Plain loops: this runs about twice per token, and a generator in all() costs 3x more.
    for offset, conditions in enumerate(pattern):
        for condition in conditions:
            if not condition.holds(columns[condition.attribute][start + offset]):
                return False
    return True


def compile_condition(key: str, value: object) -> Condition:
    """A Matcher `{KEY: value}` or `{KEY: {"IN"|"NOT_IN": [...]}}` as a Condition."""
    if key not in TOKEN_ATTRIBUTES:
        raise FeatureError(f"attribute-ruler pattern key {key!r} is not supported by "
                           f"features.pos_rules (known: {sorted(TOKEN_ATTRIBUTES)})")
    attribute = TOKEN_ATTRIBUTES[key]
    if isinstance(value, dict):
        if len(value) != 1 or next(iter(value)) not in ("IN", "NOT_IN"):
            raise FeatureError(f"attribute-ruler operator {value!r} on {key} is not supported "
                               "by features.pos_rules (only IN and NOT_IN)")
        operator, operand = next(iter(value.items()))
        return Condition(attribute, "in" if operator == "IN" else "not in", frozenset(operand))
    return Condition(attribute, "==", value)


def compile_rules(ruler_patterns: Iterable[Mapping[str, Any]]) -> list[PosRule]:
    """The rules that write POS, from a spaCy AttributeRuler's `patterns`, in rule order."""
    rules = []
    for order, rule in enumerate(ruler_patterns):
        if "POS" not in rule["attrs"]:
            continue
        patterns = tuple(
            tuple(tuple(compile_condition(key, value) for key, value in token.items())
                  for token in pattern)
            for pattern in rule["patterns"])
        index = int(rule.get("index", 0))
        if any(not 0 <= index < len(pattern) for pattern in patterns):
            raise FeatureError(f"attribute-ruler rule {order} sets token {index} of a pattern "
                               "that has no such token")
        rules.append(PosRule(order, patterns, index, str(rule["attrs"]["POS"])))
    return rules


class PosRules:
    """A pipeline component setting each token's POS from compiled attribute-ruler rules."""

    def __init__(self, rules: Sequence[PosRule] = ()) -> None:
        self.set_rules(rules)

    def set_rules(self, rules: Sequence[PosRule]) -> None:
        """Index `rules` by the tag they need, newest first."""
        self.attributes = sorted({condition.attribute for rule in rules
                                  for pattern in rule.patterns for token in pattern
                                  for condition in token} | {"tag_"})
        newest_first = sorted(rules, key=lambda rule: -rule.order)
        tag_free: list[PosRule] = []
        by_tag: dict[str, list[PosRule]] = {}
        for rule in newest_first:
            tags = rule_tags(rule)
            if tags is None:
                tag_free.append(rule)
            for tag in tags or ():
                by_tag.setdefault(tag, []).append(rule)
        # Per tag: the rules that can set a token with that tag, newest first, so the first
        # match is the one the ruler would have applied last.
        self.generic = tuple(tag_free)
        self.candidates = {tag: tuple(sorted({*group, *tag_free}, key=lambda r: -r.order))
                           for tag, group in by_tag.items()}

    def __call__(self, doc: Doc) -> Doc:
        tokens = list(doc)  # one pass: each iteration of a Doc builds new Token objects
        size = len(tokens)
        columns = {attribute: [getattr(token, attribute) for token in tokens]
                   for attribute in self.attributes}
        tags = columns["tag_"]
        for position, token in enumerate(tokens):
            for rule in self.candidates.get(tags[position], self.generic):
                if rule.matches(columns, position, size):
                    token.pos_ = rule.pos
                    break
        return doc

    def pipe(self, docs: Iterable[Doc], batch_size: int = 128) -> Iterator[Doc]:
        """`self(doc)` for each doc (spaCy's component protocol; there is nothing to batch)."""
        for doc in docs:
            yield self(doc)


def rule_tags(rule: PosRule) -> frozenset[str] | None:
    """The tags a token must have for `rule` to set it, or None when any tag may match."""
    tags: set[str] = set()
    for pattern in rule.patterns:
        required = [c for c in pattern[rule.index] if c.attribute == "tag_" and c.operator != "not in"]
        if not required:
            return None
        condition = required[0]
        tags |= {condition.value} if condition.operator == "==" else set(condition.value)
    return frozenset(tags)


def replace_attribute_ruler(nlp: Language) -> None:
    """Swap `nlp`'s attribute ruler for a `PosRules` compiled from its own rules, in place."""
    from spacy.language import Language

    rules = compile_rules(nlp.get_pipe(RULER_NAME).patterns)
    if not Language.has_factory(COMPONENT_NAME):
        Language.factory(COMPONENT_NAME, func=lambda nlp, name: PosRules())
    nlp.add_pipe(COMPONENT_NAME, after=RULER_NAME).set_rules(rules)
    nlp.remove_pipe(RULER_NAME)
