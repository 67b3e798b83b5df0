"""The JSON schemas of debate replies, so a constrained decoder cannot write a reply we cannot read.

Every reply puts its argument before its answer (reasoning before answering); an answer to a
question with options is an enum of them, so even a tiny model names a real option.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from imad.question import Question, TaskType


def answer_schema(question: Question, enum: Sequence[str] = ()) -> dict[str, Any]:
    """The schema of one answer: an enum (the question's options, or `enum` when given — e.g.
    the letters of an open question's candidates) so a tiny model cannot miss."""
    enum = tuple(enum) or question.answer_options
    if enum:
        return {"type": "string", "enum": list(enum)}
    if question.task_type is TaskType.NUMERIC:
        return {"type": "string", "pattern": r"^-?[0-9][0-9,]*(\.[0-9]+)?$", "maxLength": 24}
    return {"type": "string", "minLength": 1, "maxLength": 80}


def object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def argument_schema(max_chars: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_chars}


CONFIDENCE_SCHEMA = {"type": "integer", "minimum": 0, "maximum": 100}


def opening_schema(question: Question, argument_chars: int,
                   enum: Sequence[str] = ()) -> dict[str, Any]:
    """An argument, then the answer, then a 0–100 confidence (reasoning before answering)."""
    return object_schema({"argument": argument_schema(argument_chars),
                          "answer": answer_schema(question, enum),
                          "confidence": CONFIDENCE_SCHEMA})
