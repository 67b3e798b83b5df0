"""The prompt text shared by every debate back-end: question, peer lines, reply instructions.

Prompts are short on purpose: the embedded SmolLM2-135M reads ~100 prompt tokens/s, so every
word in a debate prompt is paid for N agents × T rounds. Peers' arguments are shown in one fixed
line format (`format_peer`) that `PEER_LINE` parses back; the population simulator reads the
same lines, so simulated agents see exactly what an LLM agent would see. The replies' JSON
schemas are in `imad.debate.schemas`; reading a reply is `imad.debate.parsing`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

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


def peers_block(peers: Sequence[PeerMessage], my_answer: str, max_chars: int) -> list[str]:
    """The lines a later round shows an agent: the other agents' last answers, then its own."""
    return ["Other agents' last answers:", *(format_peer(peer, max_chars) for peer in peers),
            f"Your last answer: {my_answer or '?'}."]


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
