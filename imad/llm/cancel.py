"""A chat model that stops a pipeline at its next LLM call once the work is cancelled.

Python cannot stop a running thread, so a pipeline whose caller went away (an HTTP client that
disconnected) would otherwise run its whole debate to the end and hold its server slot. Wrapping
the model in `CancellableChat` gives every pipeline a cancellation point at each call boundary:
after `cancel()`, the next `chat` raises `RequestCancelledError` without calling the model. The
call already running finishes (llama.cpp and HTTP calls cannot be interrupted safely).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from imad.errors import RequestCancelledError
from imad.llm.batch import run_batch
from imad.llm.context import check_fits
from imad.llm.types import ChatModel, ChatRequest, ChatResponse


class CancellableChat:
    """Forwards to `inner` until `cancel()`; then every call raises RequestCancelledError."""

    def __init__(self, inner: ChatModel, reason: str = "the request was cancelled") -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.supports_json_schema = inner.supports_json_schema
        self.supports_logprobs = inner.supports_logprobs
        self.reason = reason
        self._cancelled = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self, reason: str | None = None) -> None:
        """Make every later call raise; safe to call from any thread, more than once."""
        if reason is not None:
            self.reason = reason
        self._cancelled.set()

    def _raise_if_cancelled(self) -> None:
        if self._cancelled.is_set():
            raise RequestCancelledError(f"{self.reason}; no further call to {self.model_id!r} is made")

    def check_fits(self, request: ChatRequest) -> None:
        check_fits(self.inner, request)

    def chat(self, request: ChatRequest) -> ChatResponse:
        self._raise_if_cancelled()
        return self.inner.chat(request)

    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse | Exception]:
        """Each request through `chat`, so a cancel also stops the calls of a round not yet sent."""
        self._raise_if_cancelled()
        return run_batch(self.chat, requests, max_concurrency=getattr(self.inner, "max_concurrency", 1))
