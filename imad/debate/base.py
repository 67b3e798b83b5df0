"""The debate back-end interface and what all back-ends share (SPEC §8).

- `DebateBackend.run(question, seed_response=None) -> DebateResult`: the one interface.
- `AgentConfig`: the decoding settings every back-end has (frozen, validated on creation).
- `Opening`: one agent's independent first answer. The seed response (the router's
  self-critique, SPEC §2) stands in as agent 0's opening, so escalating a question never pays
  for that answer twice: its final answer, the argument for it (the initial reasoning, or the
  critique when the critique changed the answer) and its initial confidence.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from imad.critique.schema import CritiqueResponse
from imad.debate.calls import CallOutcome, CallRecorder, CallSpec
from imad.debate.parsing import (
    argument_from,
    canonical_answer,
    confidence_from,
    parse_answer,
    parse_json_object,
)
from imad.debate.prompts import OPENING_REPLY, answer_instruction, build_messages, format_question
from imad.debate.result import DebateResult
from imad.debate.schemas import opening_schema
from imad.errors import ConfigError, DebateError
from imad.llm.types import ChatModel, ChatRequest, TokenLogprob
from imad.question import Question


def require(condition: bool, field: str, message: str) -> None:
    """Raise ConfigError(field, message) unless `condition` holds."""
    if not condition:
        raise ConfigError(field, message)


@dataclass(frozen=True)
class AgentConfig:
    """Decoding settings shared by every back-end.

    temperature: sampling temperature of the debating agents (> 0 so agents differ).
    max_tokens: completion limit of one call. A schema-constrained reply is at most
        `argument_chars` characters of argument plus ~100 tokens of JSON (AceMAD's belief maps
        included), and a token is at least one character, so the default can never truncate one.
    argument_chars: longest argument an agent may write (~30 words: every argument is read by
        up to N−1 peers, so its length is paid many times).
    peer_chars: how much of a peer's argument is shown to another agent.
    seed: base of the per-call sampling seeds (same seed → same debate on a seeded back-end).
    """

    temperature: float = 0.7
    max_tokens: int = 256
    argument_chars: int = 150
    peer_chars: int = 150
    seed: int = 0

    def __post_init__(self) -> None:
        name = type(self).__name__
        require(0.0 <= self.temperature <= 2.0, f"{name}.temperature",
                f"must be in [0, 2], got {self.temperature}")
        require(self.max_tokens >= 16, f"{name}.max_tokens",
                f"must be >= 16, got {self.max_tokens}")
        require(self.argument_chars >= 20, f"{name}.argument_chars",
                f"must be >= 20, got {self.argument_chars}")
        require(self.peer_chars >= 0, f"{name}.peer_chars", f"must be >= 0, got {self.peer_chars}")


class DebateBackend(ABC):
    """A multi-agent (or single-agent baseline) procedure that answers one question."""

    name: ClassVar[str]
    config_class: ClassVar[type[AgentConfig]]

    def __init__(self, model: ChatModel, config: AgentConfig | None = None) -> None:
        config = self.config_class() if config is None else config
        if not isinstance(config, self.config_class):
            raise ConfigError("config", f"the {self.name!r} back-end takes a "
                              f"{self.config_class.__name__}, got {type(config).__name__}")
        if not isinstance(model, ChatModel):
            raise ConfigError("model", f"a debate needs a chat model (imad.llm.ChatModel), got "
                              f"{type(model).__name__}; build one with chat_model_from_spec")
        self.model = model
        self.config = config

    @abstractmethod
    def run(self, question: Question,
            seed_response: CritiqueResponse | None = None) -> DebateResult:
        """Debate `question`; `seed_response` stands in for one agent's opening."""

    # helpers shared by the back-ends ------------------------------------------------------

    def request(self, agent_index: int, round_index: int, messages: Any, schema: dict[str, Any],
                *, logprobs: bool = False, top_logprobs: int = 0,
                temperature: float | None = None) -> ChatRequest:
        """A request with this back-end's decoding settings and a per-(agent, round) seed."""
        use_logprobs = logprobs and self.model.supports_logprobs
        return ChatRequest(
            messages=messages,
            temperature=self.config.temperature if temperature is None else temperature,
            max_tokens=self.config.max_tokens,
            json_schema=schema if self.model.supports_json_schema else None,
            logprobs=use_logprobs,
            top_logprobs=top_logprobs if use_logprobs else 0,
            seed=self.config.seed + 1000 * round_index + agent_index,
        )


def check_question(question: Any) -> Question:
    if not isinstance(question, Question):
        raise DebateError(f"a debate needs an imad.Question, got {type(question).__name__}")
    return question


def agent_names(n: int) -> list[str]:
    return [f"agent_{i}" for i in range(n)]


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


def opening_from_seed(seed: CritiqueResponse, question: Question, agent: str) -> Opening:
    if not isinstance(seed, CritiqueResponse):
        raise DebateError(f"seed_response must be a CritiqueResponse, got {type(seed).__name__}")
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


def collect_openings(backend: DebateBackend, recorder: CallRecorder, question: Question,
                     agents: Sequence[str], seed_response: CritiqueResponse | None, *,
                     role: str = "opening", logprobs: bool = False, top_logprobs: int = 0,
                     temperature: float | None = None) -> list[Opening]:
    """Round 0: every agent answers independently; agent 0 uses the seed response if usable.

    Raises DebateError when every call failed (nothing to debate).
    """
    openings: dict[int, Opening] = {}
    if seed_response is not None:
        seeded = opening_from_seed(seed_response, question, agents[0])
        if seeded.answer:
            openings[0] = seeded
            recorder.flag("seed_opening:" + agents[0])
        else:
            recorder.flag("seed_unusable")
    schema = opening_schema(question, backend.config.argument_chars)
    specs, indices = [], []
    for i, agent in enumerate(agents):
        if i in openings:
            continue
        messages = build_messages(agent, opening_prompt(question))
        request = backend.request(i, 0, messages, schema, logprobs=logprobs,
                                  top_logprobs=top_logprobs, temperature=temperature)
        specs.append(CallSpec(agent, 0, role, request))
        indices.append(i)
    for i, outcome in zip(indices, recorder.run(specs), strict=True):
        openings[i] = parse_opening(outcome, question)
        if not outcome.failed and not openings[i].answer:
            recorder.flag(f"unparseable_answer:{agents[i]}:r0")
    has_seed = any(o.from_seed for o in openings.values())
    if specs and not has_seed and all(openings[i].failed for i in indices):
        raise DebateError(f"every opening call to {backend.model.model_id!r} failed (first error: "
                          f"{recorder.trace[-len(specs)].error}); check the model or server")
    return [openings[i] for i in range(len(agents))]
