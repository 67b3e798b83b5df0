"""The structured self-critique response and its JSON schema.

`CritiqueResponse` is what one self-critique call yields once parsed: the initial answer and
reasoning, the strongest argument for an alternative, the alternative, the final answer, and
two confidences in [0, 1]. The JSON schema constrains decoding on back-ends that support it;
for multiple-choice and yes/no/maybe questions the answer fields are enums, so even a tiny model
can only name a valid option.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from imad.question import Question, TaskType

FIELDS = (
    "initial_answer",
    "initial_reasoning",
    "critique",
    "alternative_answer",
    "final_answer",
    "confidence_initial",
    "confidence_critique",
)
TEXT_FIELDS = FIELDS[:5]
DEFAULT_MAX_TEXT_CHARS = 240
MIN_TEXT_CHARS = 30
"""`minLength` of the text fields: about a sentence (`response_schema`)."""
MAX_TEXT_CHARS_LIMIT = 20_000
"""Largest `max_text_chars` a self-critique may ask for; no answer of a few sentences needs more."""
CONFIDENCE_FIELDS = FIELDS[5:]


@dataclass(frozen=True)
class CritiqueResponse:
    """A parsed self-critique. Answers are canonical for the question's task type."""

    initial_answer: str
    initial_reasoning: str
    critique: str
    alternative_answer: str
    final_answer: str
    confidence_initial: float
    confidence_critique: float

    @property
    def answer_changed(self) -> bool:
        return self.final_answer != self.initial_answer

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CritiqueResponse:
        return cls(**{name: data[name] for name in FIELDS})


def _answer_schema(question: Question) -> dict[str, Any]:
    options = question.answer_options
    if options:
        return {"type": "string", "enum": list(options)}
    if question.task_type is TaskType.NUMERIC:
        return {"type": "string", "pattern": r"^-?[0-9][0-9,]*([.][0-9]+)?$"}
    return {"type": "string", "minLength": 1, "maxLength": 80}


def response_schema(question: Question, max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
                    min_text_chars: int = MIN_TEXT_CHARS) -> dict[str, Any]:
    """The JSON schema of a self-critique answer to `question`.

    Text fields are bounded (`minLength` about a sentence, so the reasoning is not one word: without
    it the embedded model writes empty strings; `maxLength`, so a looping model stops, and small
    models fill it, so it sets the decode time: 240 characters, two or three sentences, keeps the
    embedded model near 5–7 s per answer on two cores). The numeric pattern writes the dot as
    `[.]`: llama.cpp rejects an escaped dot and the process crashes. Confidences are integers
    0–100, the scale small models fill in most reliably (the parser
    maps them to [0, 1]).
    """
    answer = _answer_schema(question)
    text = {"type": "string", "minLength": min_text_chars, "maxLength": max_text_chars}
    confidence = {"type": "integer", "minimum": 0, "maximum": 100}
    properties = {
        "initial_answer": answer,
        "initial_reasoning": text,
        "critique": text,
        "alternative_answer": answer,
        "final_answer": answer,
        "confidence_initial": confidence,
        "confidence_critique": confidence,
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(FIELDS),
        "additionalProperties": False,
    }
