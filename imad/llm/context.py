"""Does a request fit the model's context window? Checked before the call.

A prompt too long for the model's context must be a typed `InputTooLargeError` before any LLM
call, not a back-end crash half-way through a pipeline. A back-end that can tell implements
`check_fits(request)`, which raises that error; `check_fits(model, request)` below calls it
when present and does nothing for back-ends that cannot tell (the call then fails with their
own typed error). The size counted is the whole prompt as the model sees it plus the
completion tokens the request reserves (`max_tokens`):
- embedded GGUF (`LocalGGUFChat`): llama.cpp's own tokenizer on the chat-template prompt, exact;
- OpenAI-compatible servers: only when `context_window` is configured, with the conservative
  estimate `estimate_prompt_tokens` (the OpenAI API has no tokenize endpoint);
- `ScriptedChat`: its whitespace-word "tokens", when given a `context_window`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from imad.errors import InputTooLargeError
from imad.llm.types import ChatRequest, Message

BYTES_PER_TOKEN_ESTIMATE = 3
"""UTF-8 bytes per token assumed by the estimate: English BPE tokenizers average about 4, so
3 over-counts English text by about a third (refusing a little early rather than late)."""
MESSAGE_OVERHEAD_TOKENS = 8
"""Template tokens per message (role markers, separators) added by the estimate."""


def check_fits(model: Any, request: ChatRequest) -> None:
    """Raise InputTooLargeError when `model` says `request` cannot fit its context window."""
    checker = getattr(model, "check_fits", None)
    if checker is not None:
        checker(request)


def estimate_prompt_tokens(messages: Sequence[Message]) -> int:
    """A conservative prompt size for a tokenizer we cannot run: 1 token per 3 UTF-8 bytes."""
    size = sum(len(m.text.encode("utf-8", "backslashreplace")) for m in messages)
    return math.ceil(size / BYTES_PER_TOKEN_ESTIMATE) + MESSAGE_OVERHEAD_TOKENS * (len(messages) + 1)


def refuse_if_too_large(prompt_tokens: int, request: ChatRequest, context_tokens: int, *,
                        model_id: str, counted_by: str) -> None:
    """Raise InputTooLargeError when the prompt plus the reserved completion exceeds the window."""
    reserved = request.max_tokens
    if prompt_tokens + reserved <= context_tokens:
        return
    raise InputTooLargeError(
        f"the prompt is {prompt_tokens:,} tokens ({counted_by}) and {reserved:,} more are reserved "
        f"for the answer, but model {model_id!r} has a context window of {context_tokens:,} tokens; "
        "shorten the question, its context or its choices",
        prompt_tokens=prompt_tokens, reserved_tokens=reserved, context_tokens=context_tokens)
