"""The feature groups one by one: question type, clipping, dependency depth, readability."""

from __future__ import annotations

import pytest

from features.pipeline import MAX_TEXT_CHARS, clip_text
from features.question import question_sentence, question_type
from features.readability import readability_features
from features.syntax import max_dependency_depth


@pytest.mark.parametrize("question, expected", [
    ("What is the capital of France?", "q_is_what"),
    ("what's wrong with this proof?", "q_is_what"),
    ("Why do leaves change colour?", "q_is_why"),
    ("How many legs does a spider have?", "q_is_how"),
    ("Which of the following is correct?", "q_is_wh_other"),
    ("Who wrote Hamlet?", "q_is_wh_other"),
    ("Whom did she call?", "q_is_wh_other"),
    ("Whose book is this?", "q_is_wh_other"),
    ("When did the war end?", "q_is_wh_other"),
    ("Where is the man standing?", "q_is_wh_other"),
    ("Do mitochondria play a role in remodelling lace plant leaves?", "q_is_yes_no"),
    ("Is the man who is standing tall?", "q_is_yes_no"),  # opener decides, not "who"
    ("Isn't it raining?", "q_is_yes_no"),
    ("Can statins prevent dementia?", "q_is_yes_no"),
    ("In adults, what is the usual dose?", "q_is_what"),  # first wh-word anywhere
    ("Aspirin for stroke prevention?", "q_is_yes_no"),  # no wh-word, ends in "?"
    # a story, then the question: the last "?" sentence decides
    ("Janet has 3 ducks. Each lays 2 eggs. How many eggs does she get?", "q_is_how"),
    ("Why? Is it true?", "q_is_yes_no"),
    ("Solve for x: 2x + 3 = 7.", None),  # imperative: no type
    ("Explain how vaccines work.", "q_is_how"),  # no "?", a wh-word inside
    ("", None),
    ("   ", None),
    ("???", None),
    ("这是什么？", None),  # no Latin word, full-width question mark
])
def test_question_type(question, expected):
    assert question_type(question) == expected


def test_question_sentence_is_the_last_one_ending_in_a_question_mark():
    text = "A man walks 3.5 km. Is he tired? He rests. What does he eat? Answer briefly."
    assert question_sentence(text) == "What does he eat?"
    assert question_sentence("  No question here.  ") == "No question here."


def test_clip_text_keeps_short_text_and_never_splits_a_word():
    assert clip_text("short text") == "short text"
    assert clip_text("alpha beta gamma", max_chars=13) == "alpha beta "  # "gamma" cut → dropped
    assert clip_text("alpha beta gamma", max_chars=11) == "alpha beta "  # cut at a space
    assert clip_text("x" * 50, max_chars=10) == "x" * 10  # no whitespace: hard cut
    long_text = "word " * (MAX_TEXT_CHARS // 2)
    clipped = clip_text(long_text)
    assert len(clipped) <= MAX_TEXT_CHARS
    assert clipped.split() == ["word"] * len(clipped.split())


def _doc_with_heads(heads: list[int]):
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    words = [f"w{i}" for i in range(len(heads))]
    deps = ["ROOT" if head == i else "dep" for i, head in enumerate(heads)]
    return Doc(Vocab(), words=words, heads=heads, deps=deps)


@pytest.mark.parametrize("heads, expected", [
    ([0], 0),  # one word
    ([1, 1, 1], 1),  # a root with two children
    ([1, 2, 3, 3], 3),  # a chain w0 → w1 → w2 → w3 (root)
    ([0, 0, 1, 2, 4, 4], 3),  # two sentences: depth 3 and depth 1
    ([3, 0, 1, 3, 3, 4, 5], 3),  # children listed before and after their heads
])
def test_max_dependency_depth_on_hand_built_trees(heads, expected):
    assert max_dependency_depth(_doc_with_heads(heads)) == expected


@pytest.mark.parametrize("text", ["", "   \n\t", "!!! ... ???", "— – …"])
def test_readability_of_text_without_words_is_zero(text):
    assert readability_features(text) == {"flesch_reading_ease": 0.0, "coleman_liau_index": 0.0}


def test_readability_uses_textstat_with_the_cmu_dictionary():
    # "The cat sat on the mat." 6 words, 1 sentence, 6 syllables, 17 letters.
    scores = readability_features("The cat sat on the mat.")
    assert scores["flesch_reading_ease"] == pytest.approx(206.835 - 1.015 * 6 - 84.6 * 1)
    assert scores["coleman_liau_index"] == pytest.approx(
        0.058 * (100 * 17 / 6) - 0.296 * (100 / 6) - 15.8)
    # "every": 3 syllables in the CMU dictionary (pyphen alone would say 2): 206.835 −
    # 1.015·3 − 84.6·(1 + 3 + 1)/3
    assert readability_features("Every day counts.")["flesch_reading_ease"] == pytest.approx(
        206.835 - 1.015 * 3 - 84.6 * 5 / 3)
