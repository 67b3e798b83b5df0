"""Answer canonicalisation per task type (SPEC §3).

Two answers are "the same" when their canonical forms are equal. The rules:
- multiple choice → the option letter ("b", "(B)", "B) aspirin", "Option B", or the option's
  own text all give "B"); anything else → "" (no valid option);
- yes/no/maybe → "yes" | "no" | "maybe" (first of those words found; "" if none);
- numeric → the number as a plain decimal string without thousands separators or a trailing
  ".0" ("$1,234.50" → "1234.5"); the last number in the text wins, as in GSM8K's "#### 42";
- short answer → lower-case, articles and punctuation removed, whitespace collapsed.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

from imad.question import TaskType

_LETTER_PATTERNS = (
    re.compile(r"^\s*\(?([A-Za-z])\)?\s*$"),  # "B", "(b)"
    re.compile(r"^\s*\(?([A-Za-z])[\).:\]]\s"),  # "B) aspirin", "b. text", "C: text"
    re.compile(r"\b(?:option|answer|choice)\s*(?:is\s*)?:?\s*\(?([A-Za-z])\)?(?![A-Za-z])", re.I),
)
_NUMBER = re.compile(r"[-−]?\d[\d,]*(?:\.\d+)?|[-−]?\.\d+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def canonical_choice(text: str, choices: Sequence[str]) -> str:
    """The option letter `text` names, or "" when it names none of `choices`."""
    letters = [chr(ord("A") + i) for i in range(len(choices))]
    for pattern in _LETTER_PATTERNS:
        match = pattern.search(text)
        if match and match.group(1).upper() in letters:
            return match.group(1).upper()
    normalised = canonical_text(text)
    if normalised:
        for letter, choice in zip(letters, choices, strict=True):
            if canonical_text(choice) == normalised:
                return letter
    return ""


def canonical_yes_no_maybe(text: str) -> str:
    """The first of yes/no/maybe in `text`, or ""."""
    match = re.search(r"\b(yes|no|maybe)\b", text.lower())
    return match.group(1) if match else ""


def canonical_number(text: str) -> str:
    """The last number in `text` as a plain decimal string, or ""."""
    found = _NUMBER.findall(text.replace("−", "-"))
    if not found:
        return ""
    raw = found[-1].replace(",", "").replace("−", "-")
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return ""
    if value == value.to_integral_value():
        return str(value.to_integral_value())
    return format(value.normalize(), "f")


def canonical_text(text: str) -> str:
    """SQuAD-style normalisation: NFKC, lower case, no punctuation or articles, single spaces."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def canonicalise(answer: str | None, task_type: TaskType, choices: Sequence[str] = ()) -> str:
    """The canonical form of `answer` for `task_type` ("" when it has none)."""
    if answer is None:
        return ""
    answer = str(answer)
    task_type = TaskType(task_type)
    if task_type is TaskType.MULTIPLE_CHOICE:
        return canonical_choice(answer, choices)
    if task_type is TaskType.YES_NO_MAYBE:
        return canonical_yes_no_maybe(answer)
    if task_type is TaskType.NUMERIC:
        return canonical_number(answer)
    return canonical_text(answer)


def answers_match(predicted: str | None, gold: str | None, task_type: TaskType,
                  choices: Sequence[str] = ()) -> bool:
    """True when both answers are non-empty and canonically equal."""
    left = canonicalise(predicted, task_type, choices)
    right = canonicalise(gold, task_type, choices)
    return bool(left) and left == right
