import pytest

from imad.critique.canonical import answers_match, canonicalise
from imad.question import TaskType

CHOICES = ("Aspirin", "Ibuprofen", "Paracetamol", "Morphine")


@pytest.mark.parametrize(("text", "expected"), [
    ("B", "B"), ("(b)", "B"), ("B) Ibuprofen", "B"), ("c. Paracetamol", "C"),
    ("The answer is D", "D"), ("Option: a", "A"), ("paracetamol", "C"), ("  Morphine. ", "D"),
    ("E", ""), ("none of these", ""), ("", ""),
])
def test_multiple_choice(text, expected):
    assert canonicalise(text, TaskType.MULTIPLE_CHOICE, CHOICES) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Yes", "yes"), ("no.", "no"), ("Maybe, it depends", "maybe"), ("YES it is", "yes"),
    ("perhaps", ""), ("nobody", ""),
])
def test_yes_no_maybe(text, expected):
    assert canonicalise(text, TaskType.YES_NO_MAYBE) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("42", "42"), ("$1,234.50", "1234.5"), ("#### 18", "18"), ("18.0", "18"),
    ("She makes 9 * 2 = 18 dollars", "18"), ("-3", "-3"), ("−7", "-7"), ("0.25", "0.25"),
    ("none", ""),
])
def test_numeric(text, expected):
    assert canonicalise(text, TaskType.NUMERIC) == expected


def test_short_answer_normalisation():
    assert canonicalise("The Couch!", TaskType.SHORT_ANSWER) == "couch"
    assert canonicalise("  a   red   car ", TaskType.SHORT_ANSWER) == "red car"


def test_answers_match_requires_non_empty():
    assert answers_match("B) Ibuprofen", "B", TaskType.MULTIPLE_CHOICE, CHOICES)
    assert not answers_match("", "", TaskType.SHORT_ANSWER)
    assert not answers_match(None, "yes", TaskType.YES_NO_MAYBE)
    assert answers_match("18.00", "#### 18", TaskType.NUMERIC)


@pytest.mark.parametrize(("text", "expected"), [
    ("There is no doubt: yes", "yes"),  # the word that ends a clause, not the first one
    ("No, because the trial was small", "no"),  # the first word, when punctuation follows it
    ("I found no evidence; the answer is maybe", "maybe"),  # after "answer is"
    ("no evidence either way, maybe", "maybe"),
    ("no doubt about it", "no"),  # the only one of the three words
    ("yes and no and maybe all apply here", ""),  # ambiguous: no rule applies
])
def test_yes_no_maybe_rules(text, expected):
    assert canonicalise(text, TaskType.YES_NO_MAYBE) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("1e5", "100000"), ("4.2e1", "42"), ("2.5E-2", "0.025"), ("-0", "0"),
    ("12:30", ""), ("3/4", ""), ("at 12:30 it cost 7 dollars", "7"), ("the ratio 3:1 gives 9", "9"),
    ("1e101", ""), ("1" * 101, ""), ("1e" + "9" * 5000, ""),  # beyond the documented bounds
    ("5 eggs", "5"),  # an "e" that starts a word is no exponent
])
def test_numeric_rules(text, expected):
    assert canonicalise(text, TaskType.NUMERIC) == expected
