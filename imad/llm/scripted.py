"""A deterministic chat model driven by a Python function, for tests and simulations.

`ScriptedChat` answers each request with whatever `respond(request)` returns and counts tokens
as whitespace-separated words, so protocol arithmetic (debate scores, token totals) can be
checked exactly without an LLM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from imad.llm.batch import run_batch
from imad.llm.context import refuse_if_too_large
from imad.llm.types import ChatRequest, ChatResponse, TokenLogprob


def count_words(text: str) -> int:
    """The scripted model's stand-in for a tokenizer."""
    return len(text.split())


@dataclass
class ScriptedChat:
    """Chat model whose reply is `respond(request)`; every request is kept in `calls`.

    `respond` may return a string, or a (text, token_logprobs) pair to simulate log-probs.
    `context_window`, when set, makes prompts of more words than it (with `max_tokens`) an
    `InputTooLargeError` before the call, as the real back-ends do.
    """

    respond: Callable[[ChatRequest], str | tuple[str, tuple[TokenLogprob, ...]]]
    model_id: str = "scripted"
    supports_json_schema: bool = True
    supports_logprobs: bool = False
    calls: list[ChatRequest] = field(default_factory=list)
    context_window: int | None = None

    def check_fits(self, request: ChatRequest) -> None:
        if self.context_window is not None:
            prompt = sum(count_words(m.text) for m in request.messages)
            refuse_if_too_large(prompt, request, self.context_window, model_id=self.model_id,
                                counted_by="whitespace words")

    def chat(self, request: ChatRequest) -> ChatResponse:
        self.check_fits(request)
        self.calls.append(request)
        reply = self.respond(request)
        text, logprobs = reply if isinstance(reply, tuple) else (reply, None)
        prompt = sum(count_words(m.text) for m in request.messages)
        return ChatResponse(text=text, model=self.model_id, prompt_tokens=prompt,
                            completion_tokens=count_words(text), finish_reason="stop",
                            latency_s=0.0, token_logprobs=logprobs)

    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse | Exception]:
        return run_batch(self.chat, requests, max_concurrency=1)
