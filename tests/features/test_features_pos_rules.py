"""features/pos_rules.py on hand-made rules and tokens: order, operators, the two-token rule,
and refusal of what it does not understand."""

from __future__ import annotations

import re

import pytest

from features.errors import FeatureError
from features.pos_rules import PosRules, compile_condition, compile_rules


def hand_doc(words, tags, deps=None):
    """A Doc with tags (and dependency labels) set by hand, no model."""
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import Doc

    heads = list(range(len(words))) if deps else None
    return Doc(spacy.blank("en").vocab, words=words, tags=tags, deps=deps, heads=heads)


RULES = [
    {"patterns": [[{"TAG": "VBZ"}]], "attrs": {"POS": "VERB", "MORPH": "x"}},
    {"patterns": [[{"TAG": "NN"}]], "attrs": {"POS": "NOUN"}},
    {"patterns": [[{"TAG": "EX"}]], "attrs": {"POS": "PRON"}},
    {"patterns": [[{"TAG": "VBZ", "LOWER": "is"}]], "attrs": {"LEMMA": "be", "POS": "AUX"}},
    {"patterns": [[{"LOWER": "is"}]], "attrs": {"LEMMA": "be"}},  # writes no POS: ignored
    {"patterns": [[{"DEP": "expl"}, {"LOWER": {"IN": ["is", "are"]}}]],
     "attrs": {"POS": "VERB"}, "index": 1},
    {"patterns": [[{"TAG": {"NOT_IN": ["NN", ""]}, "DEP": "aux"}]], "attrs": {"POS": "AUX"}},
]


def tagged(words, tags, deps):
    doc = hand_doc(words, tags, deps)
    PosRules(compile_rules(RULES))(doc)
    return [token.pos_ for token in doc]


def test_a_later_rule_overrides_an_earlier_one():
    # "is"/VBZ: rule 0 says VERB, rule 3 (later) says AUX; "runs" only matches rule 0
    assert tagged(["It", "is", "runs"], ["PRP", "VBZ", "VBZ"], ["nsubj", "ROOT", "dep"]) == [
        "", "AUX", "VERB"]


def test_the_two_token_rule_sets_its_second_token_after_an_expletive():
    assert tagged(["There", "is", "time"], ["EX", "VBZ", "NN"], ["expl", "ROOT", "attr"]) == [
        "PRON", "VERB", "NOUN"]


def test_not_in_and_tag_free_rules():
    # "has" is VBZ (rule 0) but its dep aux and tag not in {NN, ""} makes rule 6 win: AUX;
    # "walk"/NN with dep aux is excluded by NOT_IN and stays a NOUN
    assert tagged(["has", "walk"], ["VBZ", "NN"], ["aux", "aux"]) == ["AUX", "NOUN"]


def test_only_rules_that_write_pos_are_compiled_in_order():
    rules = compile_rules(RULES)
    assert [rule.order for rule in rules] == [0, 1, 2, 3, 5, 6]
    assert [rule.pos for rule in rules] == ["VERB", "NOUN", "PRON", "AUX", "VERB", "AUX"]


@pytest.mark.parametrize("key, value, message", [
    ("SHAPE", "Xxx", "pattern key 'SHAPE' is not supported"),
    ("LOWER", {"REGEX": "^is$"}, "operator {'REGEX': '^is$'} on LOWER is not supported"),
])
def test_an_unknown_pattern_is_refused_not_guessed(key, value, message):
    with pytest.raises(FeatureError, match=re.escape(message)):
        compile_condition(key, value)
