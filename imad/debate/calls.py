"""Making a debate's LLM calls and recording every one of them in the trace.

`CallRecorder.run` sends a batch of independent calls (one round) through the model's
`chat_batch`, so an HTTP back-end can run them concurrently, and turns each outcome into a
`DebateCall`. A failed call never stops the recorder: a truncated reply keeps its partial text and
tokens, any other `LLMError` is kept as an error string; both are flagged. The back-end decides
what a missing answer means for its protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from imad import tracing
from imad.debate.result import DebateCall
from imad.errors import DebateError, TruncatedResponseError
from imad.llm.types import ChatModel, ChatRequest, ChatResponse


@dataclass(frozen=True)
class CallSpec:
    """One call to make: who, in which round and role, and how many peer messages it carries."""

    agent: str
    round: int
    role: str
    request: ChatRequest
    messages_in: int = 0


@dataclass(frozen=True)
class CallOutcome:
    """What came back: a response (possibly truncated), or only an error."""

    spec: CallSpec
    response: ChatResponse | None
    error: str | None

    @property
    def text(self) -> str:
        return self.response.text if self.response is not None else ""

    @property
    def failed(self) -> bool:
        """True when there is no response text at all to parse."""
        return self.response is None


class CallRecorder:
    """Runs calls against one model and keeps the trace and the flags of one debate."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model
        self.trace: list[DebateCall] = []
        self.flags: list[str] = []

    def flag(self, flag: str) -> None:
        if flag not in self.flags:
            self.flags.append(flag)

    def run(self, specs: Sequence[CallSpec]) -> list[CallOutcome]:
        if not specs:
            return []
        tracing.debate_round(specs[0].round)
        replies = self.model.chat_batch([spec.request for spec in specs])
        if len(replies) != len(specs):
            raise DebateError(f"model {self.model.model_id!r} returned {len(replies)} replies "
                              f"to {len(specs)} requests")
        return [self._record(spec, reply) for spec, reply in zip(specs, replies, strict=True)]

    def run_one(self, spec: CallSpec) -> CallOutcome:
        return self.run([spec])[0]

    def absorb(self, trace: Sequence[DebateCall], flags: Sequence[str]) -> None:
        """Take in the calls and flags of a debate this one handed its question to (DOWN)."""
        self.trace.extend(trace)
        for flag in flags:
            self.flag(flag)

    def _record(self, spec: CallSpec, reply: ChatResponse | Exception) -> CallOutcome:
        where = f"{spec.agent}:r{spec.round}"
        if isinstance(reply, ChatResponse):
            outcome = CallOutcome(spec, reply, None)
        elif isinstance(reply, TruncatedResponseError):
            self.flag(f"truncated:{where}")
            outcome = CallOutcome(spec, reply.response, "truncated")
        elif isinstance(reply, Exception):
            self.flag(f"call_failed:{where}:{type(reply).__name__}")
            outcome = CallOutcome(spec, None, f"{type(reply).__name__}: {reply}")
        else:
            raise DebateError(f"model {self.model.model_id!r} returned {type(reply).__name__}, "
                              "not a ChatResponse")
        response = outcome.response
        self.trace.append(DebateCall(
            agent=spec.agent, round=spec.round, role=spec.role,
            request_messages=spec.request.messages, response_text=outcome.text,
            prompt_tokens=response.prompt_tokens if response else 0,
            completion_tokens=response.completion_tokens if response else 0,
            messages_in=spec.messages_in, latency_s=response.latency_s if response else 0.0,
            error=outcome.error,
        ))
        tracing.debate_call(self.model, spec.request, self.trace[-1])
        return outcome
