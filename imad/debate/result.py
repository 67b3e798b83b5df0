"""What every debate back-end returns: answer, per-round answers, full trace.

A `DebateResult` is built from its trace, so its token and message totals are sums over the
recorded calls by construction: nothing is counted twice and nothing escapes the count.

A *message* is one agent-written argument placed in another agent's prompt (a peer's answer in
all-to-all MAD, the opponent's argument in a pairwise SVR-MAD debate, a debater's turn shown to
the judge). Each call records how many it received in `messages_in`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from imad.llm.types import Message


@dataclass(frozen=True)
class DebateCall:
    """One LLM call made during a debate, with what it cost and what came back.

    `error` is set when the call failed (the debate went on without it, or stopped); a
    truncated call keeps its partial text and its token counts.
    """

    agent: str
    round: int
    role: str
    request_messages: tuple[Message, ...]
    response_text: str
    prompt_tokens: int
    completion_tokens: int
    messages_in: int = 0
    latency_s: float = 0.0
    error: str | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["request_messages"] = [{"role": m.role, "text": m.text} for m in self.request_messages]
        return data


@dataclass(frozen=True)
class DebateResult:
    """The outcome of one debate.

    - `final_answer`: canonical for the question's task type ("" when no agent gave one).
    - `rounds`: for each round, agent name → canonical answer after that round.
    - `trace`: every call in the order it was made.
    - `stop_reason`: why the debate ended (e.g. "rounds_done", "consensus", "accepted",
      "budget_exhausted", "confident", "judge_decided").
    - `flags`: anomalies worth knowing (fallback beliefs, failed or truncated calls, seed used).
    - `details`: back-end specific numbers (AceMAD weights and scores, SVR-MAD scores…).
    """

    backend: str
    final_answer: str
    rounds: tuple[dict[str, str], ...]
    trace: tuple[DebateCall, ...]
    stop_reason: str
    flags: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt_tokens(self) -> int:
        return sum(call.prompt_tokens for call in self.trace)

    @property
    def completion_tokens(self) -> int:
        return sum(call.completion_tokens for call in self.trace)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def messages(self) -> int:
        """Messages exchanged between agents (see the module docstring)."""
        return sum(call.messages_in for call in self.trace)

    @property
    def n_calls(self) -> int:
        return len(self.trace)

    def to_dict(self, *, include_trace: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "backend": self.backend,
            "final_answer": self.final_answer,
            "stop_reason": self.stop_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "messages": self.messages,
            "n_calls": self.n_calls,
            "flags": list(self.flags),
            "rounds": [dict(r) for r in self.rounds],
            "details": self.details,
        }
        if include_trace:
            data["trace"] = [call.to_dict() for call in self.trace]
        return data
