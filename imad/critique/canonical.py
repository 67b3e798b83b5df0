"""Answer canonicalisation per task type.

Two answers are "the same" when their canonical forms are equal. The rules:
- multiple choice → the option letter ("b", "(B)", "B) aspirin", "Option B", or the option's
  own text all give "B"); anything else → "" (no valid option);
- yes/no/maybe → "yes" | "no" | "maybe", the first rule that applies winning (`canonical_yes_no_maybe`):
  the word after "answer is"/"answer:"; the text's first word when punctuation or the end follows
  it ("No, because…"); the last such word that ends a clause ("There is no doubt: yes");
  the only one of the three words in the text ("YES it is"); otherwise "" (ambiguous);
- numeric → the number as a plain decimal string without thousands separators, exponent or a
  trailing ".0" ("$1,234.50" → "1234.5", "4.2e1" → "42"); the last number in the text wins, as in
  GSM8K's "#### 42". Numbers joined to another number by ":" or "/" (times, ratios, dates:
  "12:30", "3/4") are not single numbers and are skipped; a number with more than
  `MAX_NUMBER_DIGITS` digits or an exponent beyond ±`MAX_NUMBER_EXPONENT` is no valid answer
  (""), so a hostile "1e999999999" cannot make a gigabyte string. A number is read whole or not
  at all: the last run of letters, digits, "." and "," that holds a digit must be one
  number in full — ASCII digits, an optional sign, thousands separators only in groups of three
  ("1,234"), an optional decimal part and exponent; a trailing "." or "," ends the sentence, and
  symbols around it ("$", "%") are not part of it. Otherwise the answer has no number (""), so
  it is unparsed and escalates: "0x2A", "1,2,3", "3,5", "1.2.3", "42kg", "1_000", "٤٢", "5½",
  "10-20" and "1 234" are not read as 2, 123, 35, 1.2, 42, 1000, 42, 5, 20 or 234, nor "--5",
  "-$5" and "5-" as -5, 5 and 5 (a sign is never dropped or ignored);
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
_NUMBER_RUN = re.compile(r"[-+]?(?:[\w.,]|(?<=[0-9.][eE])[-+])+")
"""A run of letters, digits (any script), "." and "," (and an exponent's sign); a candidate when
it holds a digit."""
_WHOLE_NUMBER = re.compile(
    r"[-+]?(?:(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
"""What a candidate must be in full to be read as a number."""
_SPACE_SEPARATORS = " \u00a0\u202f\u2009"
_CURRENCY = "$€£¥"
MAX_NUMBER_DIGITS = 100
MAX_NUMBER_EXPONENT = 100
_WORD = r"\b(yes|no|maybe)\b"
_YES_NO_RULES = (
    re.compile(r"\banswer\s*(?:is|:|=|-)\s*(?:[*_\"']\s*)*" + _WORD),  # "the answer is no"
    re.compile(r"^\W*" + _WORD + r"\s*(?:[.,;:!?)\]]|$)"),  # "No, because …"
    re.compile(_WORD + r"(?=\s*(?:[.,;:!?)\]*\"']|$))"),  # "There is no doubt: yes"
)
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
    """yes, no or maybe as `text` answers it (rules in the module docstring), or ""."""
    lowered = text.lower()
    for rule in _YES_NO_RULES:
        found = rule.findall(lowered)
        if found:
            return found[-1]
    words = set(re.findall(_WORD, lowered))
    return words.pop() if len(words) == 1 else ""


def _joined_to_number(text: str, start: int, end: int) -> bool:
    """True when the number at text[start:end] is part of "12:30", "3/4" or "1:2:3"."""
    before = start >= 2 and text[start - 1] in ":/" and text[start - 2].isdigit()
    after = end + 1 < len(text) and text[end] in ":/" and text[end + 1].isdigit()
    return before or after


def _glued_to_number(text: str, start: int, end: int) -> bool:
    """True when a sign joins the run to a word before it ("10-20", "COVID-19"), or a space
    joins it to another number ("1 234"): neither is one number read whole."""
    signed_after_word = text[start] in "+-" and start >= 1 and text[start - 1].isalnum()
    # a second sign ("+-5", "--5"), a sign before a currency symbol ("-$5"), or one after the
    # number ("5-"): reading the run alone would drop or ignore a sign
    sign_dropped = ((start >= 1 and text[start - 1] in "+-")
                    or (start >= 2 and text[start - 1] in _CURRENCY and text[start - 2] in "+-")
                    or (end < len(text) and text[end] in "+-"))
    spaced_before = (start >= 2 and text[start - 1] in _SPACE_SEPARATORS
                     and text[start - 2].isdigit())
    spaced_after = (end + 1 < len(text) and text[end] in _SPACE_SEPARATORS
                    and text[end + 1].isdigit())
    return signed_after_word or sign_dropped or spaced_before or spaced_after


def canonical_number(text: str) -> str:
    """The last single number in `text` as a plain decimal string, or "" (rules above)."""
    text = text.replace("−", "-")
    found = [m for m in _NUMBER_RUN.finditer(text) if any(c.isdigit() for c in m.group())
             and not _joined_to_number(text, m.start(), m.end())]
    if not found or _glued_to_number(text, found[-1].start(), found[-1].end()):
        return ""
    raw = found[-1].group().rstrip(".,")
    if not _WHOLE_NUMBER.fullmatch(raw):
        return ""
    raw = raw.replace(",", "")
    mantissa, _, exponent = raw.lower().partition("e")
    exponent_digits = exponent.lstrip("+-")
    if (sum(c.isdigit() for c in mantissa) > MAX_NUMBER_DIGITS
            or (exponent and (len(exponent_digits) > 3 or int(exponent_digits) > MAX_NUMBER_EXPONENT))):
        return ""
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return ""
    if value == 0:
        return "0"
    if value == value.to_integral_value():
        return format(value.to_integral_value(), "f")
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
