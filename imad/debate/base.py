"""The debate back-end skeleton: one `run()` procedure, each back-end writes its protocol.

- `DebateBackend.run(question, seed_response=None) -> DebateResult`: the one interface. It
  checks the question and the seed response, builds the call recorder, names the agents, runs the
  back-end's `protocol` step and closes with a `DebateResult` whose trace and flags are the
  recorder's, so no back-end can forget a call or count one twice.
- `DebateBackend.open`: round 0, every agent's independent answer, the seed response standing in
  for agent 0's (see `imad.debate.openings`).
- `AgentConfig`: the decoding settings every back-end has (frozen, validated on creation).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar, cast, get_args, get_origin

from imad import tracing
from imad.constraints import (
    MAX_COMPLETION_TOKENS,
    MAX_SEED,
    Constraints,
    Integer,
    Real,
    check_fields,
)
from imad.critique.schema import CritiqueResponse
from imad.debate.calls import CallRecorder, CallSpec
from imad.debate.openings import (
    Opening,
    check_seed,
    opening_from_seed,
    opening_prompt,
    parse_opening,
)
from imad.debate.prompts import build_messages
from imad.debate.result import DebateResult
from imad.debate.schemas import opening_schema
from imad.errors import ConfigError, DebateError
from imad.llm.types import ChatModel, ChatRequest
from imad.question import Question

MAX_AGENTS = 64
"""Agents (and self-consistency samples) of one debate: papers use 2–10; every agent is a call
per round, and 10⁹ would exhaust memory naming them before the first call."""
MAX_ROUNDS = 20
"""Debate rounds; debates converge in 2–5, and each round costs N calls."""
MAX_TEXT_CHARS = 20_000
"""Longest argument or peer excerpt an agent writes or reads (the question limit)."""


def require(condition: bool, field: str, message: str) -> None:
    """Raise ConfigError(field, message) unless `condition` holds (rules across fields)."""
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

    constraints: ClassVar[Constraints] = {
        "temperature": Real(0.0, 2.0),
        "max_tokens": Integer(16, MAX_COMPLETION_TOKENS),
        "argument_chars": Integer(20, MAX_TEXT_CHARS),
        "peer_chars": Integer(0, MAX_TEXT_CHARS),
        "seed": Integer(0, MAX_SEED),
    }
    """Each field's type and bounds (`imad.constraints`); subclasses add their own rows."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class Debate:
    """One run in progress: what a protocol step reads (question, agents, seed) and records into."""

    question: Question
    recorder: CallRecorder
    agents: tuple[str, ...]
    seed_response: CritiqueResponse | None = None

    def flag(self, flag: str) -> None:
        self.recorder.flag(flag)

    def seed_opening(self, usable: Callable[[str], bool] = bool) -> Opening | None:
        """Agent 0's opening from the seed response; None without one, or when its answer is not
        `usable` here (flagged `seed_unusable`)."""
        if self.seed_response is None:
            return None
        seeded = opening_from_seed(self.seed_response, self.question, self.agents[0])
        if not usable(seeded.answer):
            self.flag("seed_unusable")
            return None
        self.flag("seed_opening:" + self.agents[0])
        return seeded


@dataclass(frozen=True)
class Verdict:
    """What a protocol step decided; `run` adds the trace and the flags."""

    final_answer: str
    rounds: Sequence[Mapping[str, str]]
    stop_reason: str
    details: dict[str, Any] = field(default_factory=dict)


ConfigT = TypeVar("ConfigT", bound=AgentConfig)


class DebateBackend(ABC, Generic[ConfigT]):
    """A multi-agent (or single-agent baseline) procedure that answers one question.

    A back-end names its config class once, as the type argument: `class MAD(DebateBackend[MADConfig])`.
    """

    name: ClassVar[str]
    config_class: ClassVar[type[AgentConfig]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is DebateBackend:
                (cls.config_class,) = get_args(base)

    def __init__(self, model: ChatModel, config: ConfigT | None = None) -> None:
        config = cast(ConfigT, self.config_class()) if config is None else config
        if not isinstance(config, self.config_class):
            raise ConfigError("config", f"the {self.name!r} back-end takes a "
                              f"{self.config_class.__name__}, got {type(config).__name__}")
        if not isinstance(model, ChatModel):
            raise ConfigError("model", f"a debate needs a chat model (imad.llm.ChatModel), got "
                              f"{type(model).__name__}; build one with chat_model_from_spec")
        self.model = model
        self.config: ConfigT = config

    @tracing.traced_debate
    def run(self, question: Question,
            seed_response: CritiqueResponse | None = None) -> DebateResult:
        """Debate `question`; `seed_response` stands in for one agent's opening."""
        if not isinstance(question, Question):
            raise DebateError(f"a debate needs an imad.Question, got {type(question).__name__}")
        debate = Debate(question, CallRecorder(self.model), self.agents(),
                        check_seed(seed_response))
        verdict = self.protocol(debate)
        recorder = debate.recorder
        return DebateResult(self.name, verdict.final_answer,
                            tuple(dict(answers) for answers in verdict.rounds),
                            tuple(recorder.trace), verdict.stop_reason, tuple(recorder.flags),
                            verdict.details)

    @abstractmethod
    def protocol(self, debate: Debate) -> Verdict:
        """This back-end's own step: from the first call to the decided answer."""

    def agents(self) -> tuple[str, ...]:
        """The agents' names in order; agent 0 is the one the seed response stands in for.

        `agent_0` … `agent_{N-1}` for the config's `n_agents` (one agent when it has none)."""
        return agent_names(getattr(self.config, "n_agents", 1))

    # helpers shared by the protocols ------------------------------------------------------

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

    def open(self, debate: Debate, n_agents: int | None = None, *, role: str = "opening",
             logprobs: bool = False, top_logprobs: int = 0,
             temperature: float | None = None) -> list[Opening]:
        """Round 0 for the first `n_agents` agents (all by default): each answers independently;
        agent 0 uses the seed response if usable.

        Raises DebateError when every call failed (nothing to debate).
        """
        agents = debate.agents[:n_agents]
        openings: dict[int, Opening] = {}
        seeded = debate.seed_opening()
        if seeded is not None:
            openings[0] = seeded
        schema = opening_schema(debate.question, self.config.argument_chars)
        specs, indices = [], []
        for i, agent in enumerate(agents):
            if i in openings:
                continue
            messages = build_messages(agent, opening_prompt(debate.question))
            request = self.request(i, 0, messages, schema, logprobs=logprobs,
                                   top_logprobs=top_logprobs, temperature=temperature)
            specs.append(CallSpec(agent, 0, role, request))
            indices.append(i)
        for i, outcome in zip(indices, debate.recorder.run(specs), strict=True):
            openings[i] = parse_opening(outcome, debate.question)
            if not outcome.failed and not openings[i].answer:
                debate.flag(f"unparseable_answer:{agents[i]}:r0")
        if specs and seeded is None and all(openings[i].failed for i in indices):
            error = debate.recorder.trace[-len(specs)].error
            raise DebateError(f"every opening call to {self.model.model_id!r} failed (first "
                              f"error: {error}); check the model or server")
        return [openings[i] for i in range(len(agents))]


def agent_names(n: int) -> tuple[str, ...]:
    return tuple(f"agent_{i}" for i in range(n))
