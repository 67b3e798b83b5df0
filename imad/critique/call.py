"""The one self-critique LLM call and its outcome.

`SelfCritique.run(question)` never raises for a bad answer: it returns a `CritiqueResult` whose
`status` says what happened ("ok", "parse_error", "truncated", "llm_error") and which keeps the
raw text and token counts, so the pipeline can escalate with the reason recorded and the corpus
can count failures. Only configuration mistakes raise, and, before any call, a question whose
prompt cannot fit the model's context (`InputTooLargeError`, `imad.llm.context`). The raw text
is kept with any lone surrogate written as its `\\udXXX` escape, so a corpus can always save it.

Confidence source (recorded with the corpus and the checkpoint):
- "verbal": the model's written confidences, as in the iMAD paper;
- "token_probability": the probability the model gave the tokens of its initial (resp.
  alternative) answer, read from the log-probs — better calibrated for small models, which
  write 0, 1 or 100 almost always. Falls back to "verbal" values when no log-probs came back,
  and says so in `CritiqueResult.confidence_source`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from imad import tracing
from imad.constraints import (
    MAX_COMPLETION_TOKENS,
    MAX_SEED,
    Constraints,
    InstanceOf,
    Integer,
    Options,
    Real,
    check_fields,
)
from imad.critique.parser import parse_critique
from imad.critique.prompts import PROMPT_VERSION, critique_messages
from imad.critique.schema import (
    DEFAULT_MAX_TEXT_CHARS,
    MAX_TEXT_CHARS_LIMIT,
    MIN_TEXT_CHARS,
    CritiqueResponse,
    response_schema,
)
from imad.errors import CritiqueParseError, LLMError, TruncatedResponseError
from imad.llm.context import check_fits
from imad.llm.types import ChatModel, ChatRequest, ChatResponse, TokenLogprob
from imad.question import Question
from imad.text import escape_lone_surrogates

CONFIDENCE_SOURCES = ("verbal", "token_probability")
STATUSES = ("ok", "parse_error", "truncated", "llm_error")


@dataclass(frozen=True)
class CritiqueResult:
    """What one self-critique call produced, successful or not."""

    question: Question
    status: str
    response: CritiqueResponse | None
    raw_text: str
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    latency_s: float
    model_id: str
    prompt_version: str
    confidence_source: str
    answer_probabilities: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question.id, "status": self.status,
            "response": None if self.response is None else self.response.to_dict(),
            "raw_text": self.raw_text, "error": self.error,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "finish_reason": self.finish_reason, "latency_s": self.latency_s,
            "model_id": self.model_id, "prompt_version": self.prompt_version,
            "confidence_source": self.confidence_source,
            "answer_probabilities": self.answer_probabilities,
        }


@dataclass
class SelfCritique:
    """Makes the structured self-critique call on a chat model."""

    model: ChatModel
    max_tokens: int = 512
    temperature: float = 0.0
    seed: int | None = 0
    confidence_source: str = "verbal"
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS

    constraints: ClassVar[Constraints] = {
        "model": InstanceOf(ChatModel, "a chat model (imad.llm.ChatModel)"),
        "max_tokens": Integer(32, MAX_COMPLETION_TOKENS),  # 32: room for a seven-field answer
        "temperature": Real(0.0, 2.0),
        "seed": (None, Integer(0, MAX_SEED)),
        "confidence_source": Options(*CONFIDENCE_SOURCES),
        "max_text_chars": Integer(MIN_TEXT_CHARS, MAX_TEXT_CHARS_LIMIT),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=str)

    @property
    def prompt_version(self) -> str:
        return PROMPT_VERSION

    @property
    def wants_logprobs(self) -> bool:
        """Log-probs only when the token-probability confidence reads them.

        They are not free: llama-cpp-python computes them per token in Python, which doubled the
        embedded model's time per answer (11.0 s → 23.8 s for 352 tokens, measured idle).
        """
        return (self.confidence_source == "token_probability"
                and bool(getattr(self.model, "supports_logprobs", False)))

    def request(self, question: Question) -> ChatRequest:
        """The chat request for `question` (also the cache key of its answer)."""
        schema = None
        if self.model.supports_json_schema:
            schema = response_schema(question, self.max_text_chars)
        return ChatRequest(messages=critique_messages(question), temperature=self.temperature,
                           max_tokens=self.max_tokens, json_schema=schema,
                           logprobs=self.wants_logprobs, seed=self.seed)

    def decoding_params(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed,
                "json_schema": self.model.supports_json_schema, "max_text_chars": self.max_text_chars,
                "logprobs": self.wants_logprobs}

    @tracing.traced_critique
    def run(self, question: Question) -> CritiqueResult:
        """One call; failures come back as a result with a status, never as an exception.

        Raises InputTooLargeError, without calling the model, when the prompt cannot fit.
        """
        request = self.request(question)
        check_fits(self.model, request)
        try:
            chat = self.model.chat(request)
        except TruncatedResponseError as error:
            return self._result(question, error.response, "truncated", str(error))
        except LLMError as error:
            return CritiqueResult(question, "llm_error", None, "", f"{type(error).__name__}: {error}",
                                  0, 0, "error", 0.0, self.model.model_id, PROMPT_VERSION,
                                  self.confidence_source)
        return self.interpret(question, chat)

    def interpret(self, question: Question, chat: ChatResponse) -> CritiqueResult:
        """Parse a completed chat response (also used to re-parse cached responses)."""
        if chat.truncated:
            return self._result(question, chat, "truncated",
                                f"hit the token limit after {chat.completion_tokens} tokens")
        try:
            parsed = parse_critique(chat.text, question, strict=self.model.supports_json_schema)
        except CritiqueParseError as error:
            return self._result(question, chat, "parse_error", error.reason)
        probabilities = answer_token_probabilities(chat.text, chat.token_logprobs)
        source = "verbal"
        if self.confidence_source == "token_probability" and probabilities:
            parsed = replace(
                parsed,
                confidence_initial=probabilities.get("initial_answer", parsed.confidence_initial),
                confidence_critique=probabilities.get("alternative_answer", parsed.confidence_critique),
            )
            source = "token_probability"
        return self._result(question, chat, "ok", None, parsed, probabilities, source)

    def _result(self, question: Question, chat: ChatResponse, status: str, error: str | None,
                parsed: CritiqueResponse | None = None, probabilities: dict[str, float] | None = None,
                source: str = "verbal") -> CritiqueResult:
        return CritiqueResult(question, status, parsed, escape_lone_surrogates(chat.text), error,
                              chat.prompt_tokens, chat.completion_tokens, chat.finish_reason,
                              chat.latency_s, chat.model, PROMPT_VERSION, source, probabilities or {})


def answer_token_probabilities(text: str, tokens: tuple[TokenLogprob, ...] | None) -> dict[str, float]:
    """P(tokens of each answer value) for the JSON answer fields, from generation log-probs.

    Tokens are aligned to characters by concatenation; a field's probability is the product of
    the probabilities of the tokens that overlap its value. Empty when log-probs are missing or
    do not reproduce the text (then no alignment is trustworthy).
    """
    if not tokens or "".join(t.token for t in tokens) != text:
        return {}
    starts, position = [], 0
    for token in tokens:
        starts.append(position)
        position += len(token.token)
    found: dict[str, float] = {}
    for name in ("initial_answer", "alternative_answer", "final_answer"):
        key = text.find(f'"{name}"')
        if key == -1:
            continue
        open_quote = text.find('"', text.find(":", key) + 1)
        close_quote = text.find('"', open_quote + 1)
        if open_quote == -1 or close_quote == -1:
            continue
        logprob = sum(t.logprob for t, s in zip(tokens, starts, strict=True)
                      if s < close_quote and s + len(t.token) > open_quote + 1)
        found[name] = math.exp(max(logprob, -700.0))
    return found
