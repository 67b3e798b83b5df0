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
