"""Helpers for the debate tests: scripted agents that reply from their own queue of answers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from imad.debate.prompts import AGENT_IN_SYSTEM
from imad.llm.scripted import ScriptedChat, count_words
from imad.llm.types import ChatRequest
from imad.question import Question, TaskType

MCQ = Question("Which drug is an opioid?", TaskType.MULTIPLE_CHOICE,
               ("Aspirin", "Ibuprofen", "Paracetamol", "Morphine"), id="q-mcq", gold="D")
BINARY = Question("Is the sky blue?", TaskType.MULTIPLE_CHOICE, ("Yes", "No"), id="q-bin", gold="A")


def agent_of(request: ChatRequest) -> str:
    match = AGENT_IN_SYSTEM.search(request.messages[0].text)
    assert match is not None, request.messages[0].text
    return match["agent"]


def queued_chat(replies: Mapping[str, Sequence[Any]], **kwargs: Any) -> ScriptedChat:
    """A ScriptedChat where agent X's k-th call gets replies[X][k] (dicts are sent as JSON;
    a callable is called with the request; an exception instance is raised)."""
    queues = {agent: list(items) for agent, items in replies.items()}

    def respond(request: ChatRequest) -> Any:
        agent = agent_of(request)
        assert queues.get(agent), f"unexpected extra call for {agent}"
        reply = queues[agent].pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(request)
        return json.dumps(reply) if isinstance(reply, dict) else reply

    chat = ScriptedChat(respond, **kwargs)
    chat.queues = queues  # type: ignore[attr-defined]
    return chat


def words_sent(chat: ScriptedChat) -> int:
    """Prompt tokens the scripted model counted, recomputed from the requests it received."""
    return sum(count_words(m.text) for request in chat.calls for m in request.messages)


def opening(answer: str, confidence: int = 70, argument: str = "short reason") -> dict[str, Any]:
    return {"argument": argument, "answer": answer, "confidence": confidence}
