"""Parse a self-critique completion into a `CritiqueResponse`.

Two modes:
- strict, for back-ends that decoded under the JSON schema: the text must be one JSON object
  with exactly the seven fields and the right types; anything else means the back-end did not
  honour the schema and is reported as such;
- tolerant, for back-ends without schema support: JSON anywhere in the text (also inside code
  fences or after chatter), or the tagged format `FIELD_NAME: value` (any case, `_` or space,
  markdown bold/bullets tolerated, values may span lines).

Confidences accept 0–1, 0–100 and percents: a number above 1 (or written with `%`) is read on the
0–100 scale, so exactly 1 means 1.0 (certain). Answers are canonicalised for the question's
task type; an initial or final answer that names no valid answer is a parse error.
Every failure raises `CritiqueParseError` with the raw text and the reason, and no other
exception leaves `parse_critique`: integers too long for Python (more than
`MAX_INTEGER_DIGITS` digits) are read as floats, so a 5,000-digit confidence is "not finite"
rather than a `ValueError`; text that is not valid Unicode (a lone surrogate, e.g. from the JSON
escape `\\ud800`) is refused, since spaCy and every encoder downstream would crash on it. All
scanning is linear-time, so adversarial or megabyte-long text cannot hang the parser. In tolerant
mode a JSON object is looked for only where a `{` is followed by a quoted key, so LaTeX such as
`\\frac{1}{2}` before the JSON does not use up the bounded number of attempts.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from imad.critique.canonical import canonicalise
from imad.critique.schema import CONFIDENCE_FIELDS, FIELDS, CritiqueResponse
from imad.errors import CritiqueParseError
from imad.question import Question
from imad.text import first_lone_surrogate

MAX_INTEGER_DIGITS = 100
"""Longer integer literals in JSON are read as floats (Python refuses ints over 4,300 digits)."""
MAX_JSON_ATTEMPTS = 50
"""JSON objects tried in tolerant mode before giving up; bounds the work on adversarial text."""

_FENCE = re.compile(r"```(?:json|JSON)?")
_TAG = re.compile(
    r"^[ \t>*#\-]*\**[ \t]*(initial[ _]answer|initial[ _]reasoning|critique|alternative[ _]answer"
    r"|final[ _]answer|confidence[ _]initial|confidence[ _]critique)[ \t]*\**[ \t]*[:=][ \t]*",
    re.IGNORECASE | re.MULTILINE,
)
_OBJECT_START = re.compile(r'\{\s*"')
_CONFIDENCE = re.compile(r"^\s*([-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))\s*(%|/\s*100|percent)?\s*$", re.I)
"""A confidence written as text, read whole: ASCII digits only, as for numeric answers."""


def parse_critique(text: str, question: Question, *, strict: bool = False) -> CritiqueResponse:
    """Parse `text` (one completion) for `question`; raise CritiqueParseError when impossible."""
    if not isinstance(text, str):
        raise CritiqueParseError(f"expected text, got {type(text).__name__}", repr(text))
    if not text.strip():
        raise CritiqueParseError("the response is empty", text)
    _refuse_invalid_unicode(text, "the response", text)
    fields = _strict_fields(text) if strict else _tolerant_fields(text)
    return _validate(fields, text, question, strict=strict)


def _bounded_int(literal: str) -> int | float:
    """A JSON integer; a very long one as a float (inf beyond 1e308) instead of a ValueError."""
    digits = len(literal.lstrip("-"))
    return int(literal) if digits <= MAX_INTEGER_DIGITS else float(literal)


# strict=False: the grammar lets raw control characters (newlines, tabs) into strings
_DECODER = json.JSONDecoder(strict=False, parse_int=_bounded_int)


def _refuse_invalid_unicode(value: str, name: str, raw_text: str) -> None:
    position = first_lone_surrogate(value)
    if position is not None:
        raise CritiqueParseError(f"{name} is not valid Unicode text (a lone surrogate "
                                 f"U+{ord(value[position]):04X} at character {position})", raw_text)


def _strict_fields(text: str) -> dict[str, Any]:
    try:
        data = _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise CritiqueParseError(f"schema-constrained output is not valid JSON ({error.msg} at "
                                 f"char {error.pos}); is the response truncated?", text) from error
    except RecursionError as error:
        raise CritiqueParseError("JSON nested too deeply to be a self-critique", text) from error
    if not isinstance(data, dict):
        raise CritiqueParseError(f"expected a JSON object, got {type(data).__name__}", text)
    extra = sorted(set(data) - set(FIELDS))
    if extra:
        raise CritiqueParseError(f"unexpected fields {extra}", text)
    return data


def _tolerant_fields(text: str) -> dict[str, Any]:
    data = _first_json_object(text)
    if data is not None:
        return {_field_name(k): v for k, v in data.items()}
    tagged = _tagged_fields(text)
    if tagged:
        return tagged
    raise CritiqueParseError("found neither a JSON object nor tagged FIELD: value lines", text)


def _first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` that has at least one self-critique field."""
    cleaned = _FENCE.sub(" ", text)
    # bounded: adversarial text cannot make this quadratic
    for attempt, candidate in enumerate(_OBJECT_START.finditer(cleaned)):
        if attempt >= MAX_JSON_ATTEMPTS:
            break
        try:
            data, _ = _DECODER.raw_decode(cleaned, candidate.start())
        except json.JSONDecodeError:
            continue
        except RecursionError:
            return None
        if isinstance(data, dict) and any(_field_name(k) in FIELDS for k in data):
            return data
    return None


def _field_name(key: Any) -> str:
    return str(key).strip().lower().replace(" ", "_").replace("-", "_")


def _tagged_fields(text: str) -> dict[str, str]:
    matches = list(_TAG.finditer(text))
    fields: dict[str, str] = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        name = _field_name(match.group(1))
        fields.setdefault(name, text[match.end():end].strip().strip("*").strip())
    return fields


def parse_confidence(value: Any, name: str, raw_text: str, *, strict: bool = False) -> float:
    """A confidence in [0, 1] from 0–1, 0–100, "80%", "80/100" or "80 percent"."""
    if isinstance(value, bool) or value is None:
        raise CritiqueParseError(f"{name} is {value!r}, not a number", raw_text)
    percent = False
    if isinstance(value, (int, float)):
        number = _as_float(value)
    elif strict:
        raise CritiqueParseError(f"{name} is {type(value).__name__}, the schema says number", raw_text)
    else:
        match = _CONFIDENCE.match(str(value))  # linear-time, so never cut before parsing
        if match is None:
            raise CritiqueParseError(f"{name} {str(value)[:40]!r} is not a number or percent", raw_text)
        number, percent = float(match.group(1)), match.group(2) is not None
    if not math.isfinite(number):
        raise CritiqueParseError(f"{name} is {number}, not finite", raw_text)
    if percent or number > 1.0:
        number /= 100.0
    if not 0.0 <= number <= 1.0:
        raise CritiqueParseError(f"{name} {value!r} is outside 0–1 and 0–100", raw_text)
    return number


def _as_float(number: int | float) -> float:
    """The float of a JSON number; an int beyond the float range is infinite, not an error."""
    try:
        return float(number)
    except OverflowError:
        return math.copysign(math.inf, number)


def _text(value: Any, name: str, raw_text: str, *, strict: bool) -> str:
    if isinstance(value, str):
        _refuse_invalid_unicode(value, name, raw_text)
        return value.strip()
    if not strict and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise CritiqueParseError(f"{name} is {type(value).__name__}, expected text", raw_text)


def _validate(fields: dict[str, Any], raw_text: str, question: Question, *,
              strict: bool) -> CritiqueResponse:
    missing = [name for name in FIELDS if name not in fields]
    if missing:
        raise CritiqueParseError(f"missing fields {missing}", raw_text)
    values: dict[str, Any] = {}
    for name in FIELDS:
        if name in CONFIDENCE_FIELDS:
            values[name] = parse_confidence(fields[name], name, raw_text, strict=strict)
        else:
            values[name] = _text(fields[name], name, raw_text, strict=strict)
    for name in ("initial_answer", "alternative_answer", "final_answer"):
        written = values[name]
        values[name] = canonicalise(written, question.task_type, question.choices)
        if not values[name] and name != "alternative_answer":
            raise CritiqueParseError(
                f"{name} {written[:60]!r} is not a valid {question.task_type.value} answer", raw_text)
    if not values["initial_reasoning"]:
        raise CritiqueParseError("initial_reasoning is empty", raw_text)
    return CritiqueResponse(**values)
