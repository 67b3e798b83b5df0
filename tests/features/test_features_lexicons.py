"""Lexicon files and lexicon matching: phrases, longest match, no overlaps, apostrophes."""

from __future__ import annotations

import pytest

from features.errors import FeatureError
from features.lexical import compile_lexicon, cue_tokens, lexical_features, negation_count
from features.lexicon import LEXICON_VERSIONS, load_lexicon, load_lexicons, parse_lexicon
from features.pipeline import load_pipeline, tokenize


def whitespace_tokenize(text: str) -> list[str]:
    return text.split()


def test_parse_lexicon_drops_comments_and_blanks_lowercases_and_deduplicates():
    text = "# a comment\n\nMay\nmight  # inline comment\nmay\n  It   is  possible \n"
    assert parse_lexicon(text) == ("may", "might", "it is possible")


def test_parse_lexicon_reads_typographic_apostrophes_as_plain_ones():
    assert parse_lexicon("it\u2019s possible\n") == ("it's possible",)


def test_every_shipped_lexicon_loads_with_its_expected_size():
    sizes = {name: len(entries) for name, entries in load_lexicons().items()}
    assert sizes == {"certainty": 52, "contrast": 26, "hedge": 72, "negation": 12}
    assert set(sizes) == set(LEXICON_VERSIONS)


def test_unknown_lexicon_or_version_is_a_feature_error():
    with pytest.raises(FeatureError, match="unknown lexicon 'sarcasm'"):
        load_lexicon("sarcasm")
    with pytest.raises(FeatureError, match=r"hedge\.v99\.txt is missing"):
        load_lexicon("hedge", 99)


def test_phrases_match_once_longest_first_without_overlap():
    lexicon = compile_lexicon("hedge", ["possible", "it is possible", "it is"],
                              whitespace_tokenize)
    # "it is possible" (3 tokens) wins over "it is" and "possible"; then "possible" alone.
    assert lexicon.count(whitespace_tokenize("it is possible that it is possible")) == 2
    assert lexicon.count(whitespace_tokenize("possible possible")) == 2
    assert lexicon.count(whitespace_tokenize("it is")) == 1
    assert lexicon.count(whitespace_tokenize("it was possible")) == 1


def test_a_phrase_matches_whole_tokens_only():
    lexicon = compile_lexicon("negation", ["not", "no one"], whitespace_tokenize)
    assert lexicon.count(whitespace_tokenize("notable nothing noone")) == 0
    assert lexicon.count(whitespace_tokenize("no one")) == 1


def _count(name: str, text: str) -> int:
    lexicon = compile_lexicon(name, load_lexicon(name), tokenize)
    return lexicon.count(cue_tokens(load_pipeline()(text)))


def test_every_entry_matches_itself_in_running_text():
    # Compiling with the pipeline's tokenizer must give entries that match the same words in
    # a parsed sentence: no entry is unreachable.
    for name in LEXICON_VERSIONS:
        for entry in load_lexicon(name):
            assert _count(name, f"Then {entry} here.") >= 1, (name, entry)


@pytest.mark.parametrize("text, expected", [
    ("It is not true.", 1),
    ("We don't know and can't tell.", 2),  # do + n't, ca + n't
    ("We don\u2019t know.", 1),  # typographic apostrophe
    ("It cannot be.", 1),  # can + not
    ("No one came, and nobody left.", 2),  # "no one" is one negator
    ("Nothing was found, neither here nor there.", 3),
    ("Knot notably noted.", 0),
])
def test_negations_in_real_text(text, expected):
    assert _count("negation", text) == expected


def test_a_phrase_does_not_match_across_punctuation():
    assert _count("contrast", "On the other hand, it works.") == 1
    assert _count("contrast", "On the other, hand it works.") == 0


def test_cue_features_count_each_lexicon_independently():
    lexicons = {name: compile_lexicon(name, load_lexicon(name), tokenize)
                for name in LEXICON_VERSIONS}
    tokens = cue_tokens(load_pipeline()("It is not certain. However, it might work."))
    # hedge: "not certain", "might"; certainty: "certain"; contrast: "However"
    assert lexical_features(tokens, lexicons) == {
        "hedge_count": 2.0, "certainty_count": 1.0, "contrast_count": 1.0}
    assert negation_count(tokens, lexicons) == 1.0
