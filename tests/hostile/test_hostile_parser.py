"""Hostile input to the self-critique parser and the answer canonicaliser (issue 14, items 3, 11).

Every case is text a broken or adversarial model could write. The rule under test: nothing
but `CritiqueParseError` leaves `parse_critique`, a parsed response holds only finite
confidences in [0, 1] and valid Unicode text, and the tolerant readings follow the documented
rules of `imad.critique.canonical`. The property tests draw text that includes lone surrogates
and JSON with hostile values; pytest-timeout bounds each one (no hang), nothing times it.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from imad.critique.canonical import canonicalise
from imad.critique.parser import parse_critique
from imad.critique.schema import FIELDS, CritiqueResponse
from imad.errors import CritiqueParseError
from imad.question import Question, TaskType

YNM = Question("Does exercise lower blood pressure?", TaskType.YES_NO_MAYBE)
NUM = Question("How many eggs are left?", TaskType.NUMERIC)
MCQ = Question("Which drug is an opioid?", TaskType.MULTIPLE_CHOICE, ("Aspirin", "Morphine"))
QUESTIONS = {"ynm": YNM, "num": NUM, "mcq": MCQ}

GOOD = {"initial_answer": "yes", "initial_reasoning": "Trials show a drop of a few mmHg.",
        "critique": "No, the effect may be too small to matter.", "alternative_answer": "no",
        "final_answer": "yes", "confidence_initial": 80, "confidence_critique": 20}


def with_raw(field: str, literal: str, base: dict | None = None) -> str:
    """GOOD as JSON text with `field`'s value replaced by the raw JSON `literal`."""
    data = dict(base or GOOD)
    data[field] = "@@"
    return json.dumps(data).replace('"@@"', literal)


def tagged(**values: str) -> str:
    data = {**{k: str(v) for k, v in GOOD.items()}, **values}
    return "\n".join(f"{name.upper()}: {value}" for name, value in data.items())


LATEX = r"Using \frac{a}{b} and \frac{c}{d}. " * 13  # 26 \frac{}{}, 52 braces before the JSON

# (id, question, text, strict, expected): expected is ("error", reason fragment) or
# ("ok", {field: value}) — every case failed on the code before issue 14's fix.
CASES = [
    ("400-digit int confidence, strict", "ynm", with_raw("confidence_initial", "9" * 400), True,
     ("error", "confidence_initial is inf, not finite")),
    ("400-digit int confidence, tolerant", "ynm", with_raw("confidence_initial", "9" * 400), False,
     ("error", "confidence_initial is inf, not finite")),
    ("5000-digit int confidence, strict", "ynm", with_raw("confidence_critique", "1" * 5000), True,
     ("error", "confidence_critique is inf, not finite")),
    ("5000-digit negative int, tolerant", "ynm", with_raw("confidence_initial", "-" + "7" * 5000), False,
     ("error", "confidence_initial is -inf, not finite")),
    ("5000-digit int as numeric answer", "num",
     with_raw("initial_answer", "1" + "0" * 5000, {**GOOD, "alternative_answer": "2", "final_answer": "3"}),
     False, ("error", "is not a valid numeric answer")),
    ("5000-digit int in a non-field key", "ynm",
     json.dumps(GOOD)[:-1] + ', "padding": ' + "3" * 5000 + "}", False, ("ok", {"final_answer": "yes"})),
    ("lone surrogate in the raw text", "ynm", json.dumps(GOOD) + "\ud800", False,
     ("error", "the response is not valid Unicode text (a lone surrogate U+D800")),
    ("JSON escape of a lone surrogate in the reasoning", "ynm",
     with_raw("initial_reasoning", '"Because \\ud800 of trials."'), True,
     ("error", "initial_reasoning is not valid Unicode text (a lone surrogate U+D800 at character 8)")),
    ("JSON escape of a low surrogate in the critique", "ynm",
     with_raw("critique", '"\\udfff it may not."'), False, ("error", "critique is not valid Unicode")),
    ("lone surrogate in a tagged line", "ynm", tagged(critique="maybe \udc80 not"), False,
     ("error", "not valid Unicode")),
    ("26 LaTeX fractions before valid JSON", "ynm", LATEX + json.dumps(GOOD), False,
     ("ok", {"final_answer": "yes", "confidence_initial": 0.8})),
    ("60 empty braces before valid JSON", "ynm", "{} " * 60 + json.dumps(GOOD), False,
     ("ok", {"final_answer": "yes"})),
    ("confidence string longer than 64 characters", "ynm",
     with_raw("confidence_initial", json.dumps(" " * 70 + "80%")), False,
     ("ok", {"confidence_initial": 0.8})),
    ("confidence string of 100 characters with its percent sign last", "ynm",
     with_raw("confidence_critique", json.dumps("0.5" + " " * 98 + "%")), False,
     ("ok", {"confidence_critique": 0.005})),
    ("yes/no: 'There is no doubt: yes'", "ynm", tagged(final_answer="There is no doubt: yes"), False,
     ("ok", {"final_answer": "yes"})),
    ("yes/no: 'No doubt, yes'", "ynm", tagged(initial_answer="No doubt, yes"), False,
     ("ok", {"initial_answer": "yes"})),
    ("yes/no: 'not sure, the answer is no'", "ynm",
     tagged(final_answer="maybe not sure, the answer is no"), False, ("ok", {"final_answer": "no"})),
    ("numeric: scientific notation 1e5", "num",
     tagged(initial_answer="1e5", alternative_answer="2", final_answer="4.2e1"), False,
     ("ok", {"initial_answer": "100000", "final_answer": "42"})),
    ("numeric: 1.5E-3", "num", tagged(initial_answer="1.5E-3", alternative_answer="2", final_answer="2"),
     False, ("ok", {"initial_answer": "0.0015"})),
    ("numeric: a time is not a number", "num",
     tagged(initial_answer="12:30", alternative_answer="2", final_answer="2"), False,
     ("error", "initial_answer '12:30' is not a valid numeric answer")),
    ("numeric: a ratio after the number", "num",
     tagged(initial_answer="7 at a ratio of 3:1", alternative_answer="2", final_answer="2"), False,
     ("ok", {"initial_answer": "7"})),
    ("numeric: exponent beyond the bound", "num",
     tagged(initial_answer="1e999999999", alternative_answer="2", final_answer="2"), False,
     ("error", "is not a valid numeric answer")),
]


@pytest.mark.parametrize(("name", "question", "text", "strict", "expected"), CASES,
                         ids=[case[0] for case in CASES])
def test_hostile_parser_case(name, question, text, strict, expected):
    kind, detail = expected
    if kind == "error":
        with pytest.raises(CritiqueParseError) as caught:
            parse_critique(text, QUESTIONS[question], strict=strict)
        assert detail in caught.value.reason
        assert caught.value.raw_text == text  # nothing lost: the raw text travels with the error
        return
    parsed = parse_critique(text, QUESTIONS[question], strict=strict)
    for field, value in detail.items():
        assert getattr(parsed, field) == (pytest.approx(value) if isinstance(value, float) else value)


def check_outcome(text: object, question: Question, strict: bool) -> None:
    """The property: a valid response or CritiqueParseError, nothing else, nothing non-finite."""
    try:
        parsed = parse_critique(text, question, strict=strict)  # type: ignore[arg-type]
    except CritiqueParseError as error:
        assert error.reason
        return
    assert isinstance(parsed, CritiqueResponse)
    for name in ("confidence_initial", "confidence_critique"):
        value = getattr(parsed, name)
        assert math.isfinite(value) and 0.0 <= value <= 1.0
    for name in FIELDS[:5]:
        getattr(parsed, name).encode("utf-8")  # valid Unicode: spaCy and HTTP can take it


ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=300)
HOSTILE_VALUES = st.one_of(
    st.integers(min_value=-(10**600), max_value=10**600),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(), st.none(), ANY_TEXT,
    st.sampled_from(["80%", "1e5", "12:30", "There is no doubt: yes", " " * 80 + "50", "\\frac{1}{2}"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
JSON_RESPONSES = st.fixed_dictionaries({name: HOSTILE_VALUES for name in FIELDS})


@settings(max_examples=300, deadline=None)
@given(text=ANY_TEXT, question=st.sampled_from(sorted(QUESTIONS)), strict=st.booleans())
def test_property_any_text_gives_a_response_or_a_parse_error(text, question, strict):
    check_outcome(text, QUESTIONS[question], strict)


@settings(max_examples=300, deadline=None)
@given(data=JSON_RESPONSES, prefix=st.sampled_from(["", LATEX, "{} " * 60, "Sure:\n```json\n"]),
       question=st.sampled_from(sorted(QUESTIONS)), strict=st.booleans())
def test_property_hostile_json_values_give_a_response_or_a_parse_error(data, prefix, question, strict):
    text = prefix + json.dumps(data, allow_nan=True)
    check_outcome(text, QUESTIONS[question], strict)


@settings(max_examples=300, deadline=None)
@given(text=ANY_TEXT, task_type=st.sampled_from(list(TaskType)))
def test_property_canonicalise_never_raises_and_stays_short(text, task_type):
    answer = canonicalise(text, task_type, ("Aspirin", "Morphine"))
    assert isinstance(answer, str) and len(answer) <= max(len(text), 250)


# (written final_answer, canonical number or "" when it is no number): a number is read whole or
# not at all (issue 22, item 3); "" makes the answer unparsed, so it escalates.
NUMBER_FORMS = [
    ("0x2A", ""), ("1,2,3", ""), ("1,234", "1234"), ("1,234,567.5", "1234567.5"),
    ("12,34", ""), ("1,2345", ""), ("3,5", ""), (",5", ""), ("1.234,5", ""),  # wrong grouping
    ("-5", "-5"), ("+5", "5"), ("−5", "-5"), ("10-20", ""), ("COVID-19", ""),  # signs
    ("0.25", "0.25"), (".5", "0.5"), ("1.2.3", ""), ("1.", "1"),  # decimals
    ("4.2e1", "42"), ("2.5E-2", "0.025"), ("1e5x", ""), ("1.e5", ""),  # exponents
    ("42 kg", "42"), ("42kg", ""), ("$1,234.50", "1234.5"), ("50%", "50"),  # units and symbols
    ("3/4", ""), ("12:30", ""), ("5½", ""), ("5²", ""),  # fractions, times, Unicode numerals
    ("The answer is 42.", "42"), ("42, because 6 × 7", "7"), ("42 apples", "42"),  # trailing text
    ("٤٢", ""), ("4٢", ""), ("４２", ""), ("1_000", ""),  # non-ASCII digits, Python literals
    ("1 234", ""), ("1\u00a0234", ""), ("  42  ", "42"), ("6 × 7 = 42", "42"),  # spaces
    ("+-5", ""), ("--5", ""), ("-$5", ""), ("5-", ""), ("$-5", "-5"), ("(5)", "5"),  # signs kept
    ("1e999", ""), ("1e-400", ""), ("1e101", ""), ("NaN", ""), ("Infinity", ""),  # range
    ("0b101", ""), ("0o17", ""), ("1,00,000", ""), ("1,234e3", "1234000"), ("1e+5", "100000"),
    ("00042", "42"), ("-0", "0"),
]


@pytest.mark.parametrize("strict", [False, True], ids=["tolerant", "strict"])
@pytest.mark.parametrize(("written", "expected"), NUMBER_FORMS, ids=[f[0] for f in NUMBER_FORMS])
def test_numbers_are_read_whole_or_not_at_all(written, expected, strict):
    text = json.dumps({**GOOD, "initial_answer": "7", "alternative_answer": "8",
                       "final_answer": written})
    if not expected:
        with pytest.raises(CritiqueParseError) as caught:
            parse_critique(text, NUM, strict=strict)
        assert f"final_answer {written!r} is not a valid numeric answer" in caught.value.reason
        return
    assert parse_critique(text, NUM, strict=strict).final_answer == expected


# (confidence written as text, value or None when it is refused): the same rule for confidences.
CONFIDENCE_FORMS = [
    ("80", 0.8), ("80%", 0.8), ("80 percent", 0.8), ("80/100", 0.8), ("0.8", 0.8), (".8", 0.8),
    (" 80 ", 0.8), ("٨٠", None), ("８０", None), ("0x50", None), ("8,0", None), ("80kg", None),
    ("1e2", None), ("1_0", None), ("80 90", None), ("80%%", None),
]


@pytest.mark.parametrize(("written", "expected"), CONFIDENCE_FORMS,
                         ids=[f[0] for f in CONFIDENCE_FORMS])
def test_text_confidences_are_read_whole_or_refused(written, expected):
    text = json.dumps({**GOOD, "confidence_initial": written})
    if expected is None:
        with pytest.raises(CritiqueParseError) as caught:
            parse_critique(text, YNM)
        assert "confidence_initial" in caught.value.reason
        return
    assert parse_critique(text, YNM).confidence_initial == pytest.approx(expected)
