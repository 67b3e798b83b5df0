"""Round 0: one agent's independent first answer, read from a reply or from the seed response.

An `Opening` is an agent's canonical answer, the argument for it and its confidence. The seed
response (the router's self-critique, SPEC §2) stands in as agent 0's opening, so escalating a
question never pays for that answer twice: its final answer, the argument for it (the initial
reasoning, or the critique when the critique changed the answer) and its initial confidence.
`DebateBackend.open` (in `imad.debate.base`) makes the calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from imad.critique.schema import CritiqueResponse
from imad.debate.calls import CallOutcome
from imad.debate.parsing import (
    argument_from,
    canonical_answer,
    confidence_from,
    parse_answer,
    parse_json_object,
)
from imad.debate.prompts import OPENING_REPLY, answer_instruction, format_question
from imad.errors import DebateError
from imad.llm.types import TokenLogprob
from imad.question import Question


@dataclass(frozen=True)
class Opening:
    """One agent's independent answer: canonical answer ("" if none), argument, confidence."""

    agent: str
    answer: str
    argument: str
    confidence: float | None
    token_logprobs: tuple[TokenLogprob, ...] | None = None
    from_seed: bool = False
    failed: bool = False


def check_seed(seed: object) -> CritiqueResponse | None:
    """`seed` when it is a CritiqueResponse or None; else DebateError (before any call is made)."""
    if seed is not None and not isinstance(seed, CritiqueResponse):
        raise DebateError(f"seed_response must be a CritiqueResponse, got {type(seed).__name__}")
    return seed


def opening_from_seed(seed: CritiqueResponse, question: Question, agent: str) -> Opening:
    answer = canonical_answer(seed.final_answer, question)
    argument = seed.critique if seed.answer_changed and seed.critique else seed.initial_reasoning
    return Opening(agent, answer, " ".join(argument.split()), seed.confidence_initial,
                   from_seed=True)


def seed_from_opening(opening: Opening) -> CritiqueResponse:
    """An opening as a seed response, to hand a first answer to another back-end (DOWN)."""
    confidence = 0.0 if opening.confidence is None else opening.confidence
    return CritiqueResponse(opening.answer, opening.argument, "", opening.answer, opening.answer,
                            confidence, confidence)


def opening_prompt(question: Question) -> str:
    return f"{format_question(question)}\n{answer_instruction(question)} {OPENING_REPLY}"


def parse_opening(outcome: CallOutcome, question: Question) -> Opening:
    data = parse_json_object(outcome.text)
    response = outcome.response
    return Opening(
        agent=outcome.spec.agent,
        answer=parse_answer(outcome.text, question, data),
        argument=argument_from(outcome.text, data),
        confidence=confidence_from(outcome.text, data),
        token_logprobs=response.token_logprobs if response is not None else None,
        failed=outcome.failed,
    )
