"""Prompts, JSON schemas and tolerant parsers shared by every debate back-end.

Prompts are short on purpose: the embedded SmolLM2-135M reads ~100 prompt tokens/s, so every
word in a debate prompt is paid for N agents × T rounds. Peers' arguments are shown in one fixed
line format (`format_peer`) that `PEER_LINE` parses back; the population simulator reads the
same lines, so simulated agents see exactly what an LLM agent would see.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from imad.critique.canonical import canonicalise
from imad.llm.types import Message
from imad.question import Question, TaskType

OPENING_REPLY = "Reply in JSON: a short argument, your answer, and your confidence (0-100)."
ANSWER_REPLY = "Reply in JSON: a short argument and your answer."

CONTEXT_MAX_CHARS = 1500
"""Longest context (e.g. a PubMedQA abstract) put in a debate prompt; the rest is cut."""

SYSTEM_TEMPLATE = "You are {agent}, one of several agents answering a question. Be brief."
AGENT_IN_SYSTEM = re.compile(r"You are (?P<agent>[\w-]+),")

PEER_LINE = re.compile(
    r"^\[(?P<agent>[\w-]+)(?:, influence (?P<influence>[0-9.]+))?\] "
    r"answer (?P<answer>[^:\n]*): (?P<argument>.*)$",
    re.M,
)


@dataclass(frozen=True)
class PeerMessage:
    """One agent's answer and argument as shown to another agent."""

    agent: str
    answer: str
    argument: str
    influence: float | None = None


def format_peer(peer: PeerMessage, max_chars: int) -> str:
    argument = " ".join(peer.argument.split())[:max_chars]
    weight = "" if peer.influence is None else f", influence {peer.influence:.2f}"
    return f"[{peer.agent}{weight}] answer {peer.answer or '?'}: {argument}"


def parse_peers(text: str) -> list[PeerMessage]:
    """The peer messages in a prompt (inverse of `format_peer`, for the simulator and tests)."""
    return [PeerMessage(m["agent"], m["answer"], m["argument"],
                        None if m["influence"] is None else float(m["influence"]))
            for m in PEER_LINE.finditer(text)]


def answer_instruction(question: Question, candidates: Sequence[str] = ()) -> str:
    if candidates or question.task_type is TaskType.MULTIPLE_CHOICE:
        return "The answer is one option letter."
    if question.task_type is TaskType.YES_NO_MAYBE:
        return "The answer is yes, no or maybe."
    if question.task_type is TaskType.NUMERIC:
        return "The answer is a number."
    return "The answer is a few words."


def format_question(question: Question, candidates: Sequence[str] = ()) -> str:
    """Context, question and lettered options (or lettered `candidates` for an open question)."""
    parts = []
    if question.context:
        parts.append("Context: " + question.context[:CONTEXT_MAX_CHARS])
    parts.append("Question: " + question.text.strip())
    labels = candidates or question.choices
    for letter, text in zip(letters(len(labels)), labels, strict=True):
        parts.append(f"{letter}. {text}")
    return "\n".join(parts)


def letters(n: int) -> tuple[str, ...]:
    return tuple(chr(ord("A") + i) for i in range(n))


def build_messages(agent: str, body: str) -> tuple[Message, ...]:
    return (Message("system", SYSTEM_TEMPLATE.format(agent=agent)), Message("user", body))


# --- JSON schemas ---------------------------------------------------------------------------


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


# --- Tolerant parsing --------------------------------------------------------------------------

_ANSWER_IN_TEXT = re.compile(
    r"\banswer\b[\"']?\s*(?:is\s*)?[:=]?\s*[\"']?(?P<value>[^\n,;\"'}]+)", re.I)
_CONFIDENCE_IN_TEXT = re.compile(r"\bconfidence\b\W{0,3}\s*[:=]?\s*(?P<value>[0-9.]+\s*%?)", re.I)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in `text` (whole text, or from the first `{` to the last `}`), or None."""
    for candidate in (text, text[text.find("{"): text.rfind("}") + 1]):
        if not candidate:
            continue
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
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
