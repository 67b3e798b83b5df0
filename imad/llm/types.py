"""The chat-model protocol: one request type, one response type, one interface.

Every back-end (HTTP, embedded GGUF, cache) takes a `ChatRequest` and returns a `ChatResponse`.
Both are frozen and JSON-serialisable so that a request can be hashed for the record/replay
cache and a response stored and restored bit-for-bit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from imad.errors import ConfigError

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    """One chat message. `images` are local file paths or URLs sent as image parts."""

    role: Role
    text: str
    images: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.role not in ("system", "user", "assistant"):
            raise ConfigError("Message.role", f"must be system, user or assistant, got {self.role!r}")


@dataclass(frozen=True)
class ChatRequest:
    """Everything that determines a completion; the cache key is a hash of all of it."""

    messages: tuple[Message, ...]
    temperature: float = 0.0
    max_tokens: int = 512
    json_schema: dict[str, Any] | None = None
    logprobs: bool = False
    top_logprobs: int = 0
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.messages:
            raise ConfigError("ChatRequest.messages", "needs at least one message")
        if not 0.0 <= self.temperature <= 2.0:
            raise ConfigError("ChatRequest.temperature", f"must be in [0, 2], got {self.temperature}")
        if self.max_tokens < 1:
            raise ConfigError("ChatRequest.max_tokens", f"must be >= 1, got {self.max_tokens}")
        if not 0 <= self.top_logprobs <= 20:
            raise ConfigError("ChatRequest.top_logprobs", f"must be in [0, 20], got {self.top_logprobs}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def cache_key(self, model_id: str) -> str:
        """SHA-256 of the model id and the canonical JSON of the full request."""
        payload = json.dumps({"model": model_id, "request": self.to_dict()}, sort_keys=True,
                             ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenLogprob:
    """Log-probability of one generated token, with the most likely alternatives."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatResponse:
    """A completed chat call: the text plus what it cost and how it ended."""

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    latency_s: float
    token_logprobs: tuple[TokenLogprob, ...] | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatResponse:
        logprobs = data.get("token_logprobs")
        return cls(
            text=data["text"], model=data["model"], prompt_tokens=int(data["prompt_tokens"]),
            completion_tokens=int(data["completion_tokens"]), finish_reason=data["finish_reason"],
            latency_s=float(data["latency_s"]),
            token_logprobs=None if logprobs is None else tuple(TokenLogprob(**t) for t in logprobs),
        )


@runtime_checkable
class ChatModel(Protocol):
    """What every back-end implements.

    `chat` raises `TruncatedResponseError` (carrying the partial response) when the model hit
    `max_tokens`, and an `LLMError` subclass for every other failure.
    """

    model_id: str
    supports_json_schema: bool
    supports_logprobs: bool

    def chat(self, request: ChatRequest) -> ChatResponse: ...

    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse | Exception]: ...


def user_prompt(text: str, *, system: str | None = None, images: Sequence[str] = ()) -> tuple[Message, ...]:
    """The common two-message prompt: an optional system message and one user message."""
    head = (Message("system", system),) if system else ()
    return (*head, Message("user", text, tuple(images)))
