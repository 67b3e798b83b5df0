"""Tolerant readers of debate replies: answer, confidence and argument from JSON or free text.

A reply that broke its schema (truncated JSON, prose) still gives what can be read from it; what
cannot be read comes back empty ("" or None) for the back-end to flag.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from imad.critique.canonical import canonicalise
from imad.jsonio import UntrustedJSONError, loads_untrusted
from imad.question import Question, TaskType

_ANSWER_IN_TEXT = re.compile(
    r"\banswer\b[\"']?\s*(?:is\s*)?[:=]?\s*[\"']?(?P<value>[^\n,;\"'}]+)", re.I)
_CONFIDENCE_IN_TEXT = re.compile(r"\bconfidence\b\W{0,3}\s*[:=]?\s*(?P<value>[0-9.]+\s*%?)", re.I)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in `text` (whole text, or from the first `{` to the last `}`), or None.

    Nesting too deep for Python's decoder (`"[" * 3000`, a hostile or broken reply) is no
    object, like any other unreadable reply: the agent's turn falls back and is flagged."""
    for candidate in (text, text[text.find("{"): text.rfind("}") + 1]):
        if not candidate:
            continue
        try:
            value = loads_untrusted(candidate)
        except UntrustedJSONError:
            continue
        if isinstance(value, dict):
            return value
    return None


def canonical_answer(value: Any, question: Question, candidates: Sequence[str] = ()) -> str:
    """`value` canonicalised for the question. With `candidates` (the lettered canonical answers
    of an open question, see `format_question`) a letter maps back to its candidate and anything
    outside the candidates gives ""."""
    if value is None or isinstance(value, (dict, list)):
        return ""
    text = str(value)
    if candidates:
        letter = canonicalise(text, TaskType.MULTIPLE_CHOICE, candidates)
        if letter:
            return candidates[ord(letter) - ord("A")]
        answer = canonicalise(text, question.task_type, question.choices)
        return answer if answer in candidates else ""
    return canonicalise(text, question.task_type, question.choices)


def parse_answer(text: str, question: Question, data: dict[str, Any] | None = None,
                 candidates: Sequence[str] = (), key: str = "answer") -> str:
    """The canonical answer in a response: the JSON field, else an "answer: …" line, else ""."""
    if data is not None and key in data:
        return canonical_answer(data[key], question, candidates)
    match = _ANSWER_IN_TEXT.search(text)
    return canonical_answer(match["value"], question, candidates) if match else ""


def parse_confidence(value: Any) -> float | None:
    """A confidence in [0, 1] from 0–1, 0–100 or "85%"; None when it is not a number."""
    if isinstance(value, bool) or value is None:
        return None
    text = str(value).strip()
    percent = text.endswith("%")
    try:
        number = float(text.rstrip("%").strip())
    except ValueError:
        return None
    if number != number or number < 0:  # NaN or negative
        return None
    if percent or number > 1.0:
        number /= 100.0
    return min(number, 1.0)


def confidence_from(text: str, data: dict[str, Any] | None) -> float | None:
    if data is not None and "confidence" in data:
        return parse_confidence(data["confidence"])
    match = _CONFIDENCE_IN_TEXT.search(text)
    return parse_confidence(match["value"]) if match else None


_ARGUMENT_IN_TEXT = re.compile(r'"(?:argument|reasoning)"\s*:\s*"(?P<value>(?:[^"\\]|\\.)*)')


def argument_from(text: str, data: dict[str, Any] | None) -> str:
    """The argument field; from broken or cut-off JSON its (partial) string; else the text."""
    if data is not None:
        for key in ("argument", "reasoning"):
            if isinstance(data.get(key), str):
                return data[key].strip()
    match = _ARGUMENT_IN_TEXT.search(text)
    return " ".join((match["value"] if match else text).split())
