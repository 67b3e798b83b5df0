"""One method's answer to one question of the end-to-end benchmark, and what it cost.

`Answered` is what a method returns; `QuestionOutcome` adds whether it was right and its tokens,
calls and seconds. The benchmark builds them, the metrics and the report read them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Answered:
    """What a method returned for one question, before its cost is attached.

    For a selective method, `escalated` says whether it debated, `single_answer` is the first,
    single-agent answer (iMAD: the self-critique's final answer, "" when unparsed; DOWN: its
    opening), and `p` the score it decided on (iMAD: the router's p; DOWN: the confidence).
    """

    answer: str
    messages: int
    stop: str
    error: str | None = None
    escalated: bool | None = None
    single_answer: str | None = None
    p: float | None = None
    confidence: float | None = None
    """iMAD: the self-critique's verbal `confidence_initial` (the deferral curve's second gate)."""
    single_tokens: int | None = None
    """iMAD: the tokens of the self-critique call alone (the rest of the total is the debate's)."""


@dataclass(frozen=True, kw_only=True)
class QuestionOutcome(Answered):
    """One method's answer to one question (`Answered`), whether it was right, and its cost."""

    question_id: str
    gold: str
    correct: bool
    prompt_tokens: int
    completion_tokens: int
    calls: int
    model_seconds: float
    failed_calls: int = 0
    single_correct: bool | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_tokens": self.total_tokens}
