"""Telling an upstream model-server failure apart from a bad answer (502 / 504 vs 200).

The pipeline never raises for a failed LLM call: it records the error as text and escalates or
falls back, which is right for batch evaluation but hides from an HTTP client *why* no answer
came. `UpstreamWatch` wraps the chat model for one request and keeps every `LLMError` it saw, so
the server can answer a pipeline that produced nothing with the upstream's own typed error:
504 for a timeout, 502 for a dropped connection, a 5xx or an unusable reply.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

from imad.errors import (
    LLMError,
    LLMRateLimitError,
    LLMTimeoutError,
    ServeError,
    TruncatedResponseError,
)
from imad.llm.context import check_fits
from imad.llm.types import ChatModel, ChatRequest, ChatResponse


class UpstreamWatch:
    """A chat model that forwards to `inner` and records the `LLMError`s of its calls.

    Truncated answers are not failures of the server (the model answered), so they are passed
    on without being recorded. One instance serves one request; it is thread-safe because a
    debate round sends its calls concurrently.
    """

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.supports_json_schema = inner.supports_json_schema
        self.supports_logprobs = inner.supports_logprobs
        self._errors: list[LLMError] = []
        self._lock = threading.Lock()

    @property
    def errors(self) -> list[LLMError]:
        with self._lock:
            return list(self._errors)

    def _record(self, error: BaseException) -> None:
        if isinstance(error, LLMError) and not isinstance(error, TruncatedResponseError):
            with self._lock:
                self._errors.append(error)

    def check_fits(self, request: ChatRequest) -> None:
        check_fits(self.inner, request)

    def chat(self, request: ChatRequest) -> ChatResponse:
        try:
            return self.inner.chat(request)
        except LLMError as error:
            self._record(error)
            raise

    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse | Exception]:
        replies = self.inner.chat_batch(requests)
        for reply in replies:
            if isinstance(reply, Exception):
                self._record(reply)
        return replies


def upstream_failure(errors: Sequence[LLMError]) -> ServeError | None:
    """The HTTP error for a request whose pipeline failed because of `errors` (first one wins)."""
    if not errors:
        return None
    first = errors[0]
    detail = f"{type(first).__name__}: {first}"
    if len(errors) > 1:
        detail += f" (and {len(errors) - 1} more failed call{'s' if len(errors) > 2 else ''})"
    if isinstance(first, LLMTimeoutError):
        return ServeError(504, f"the upstream model server timed out: {detail}",
                          type="upstream_error", code="upstream_timeout")
    if isinstance(first, LLMRateLimitError):
        retry_after = max(1, math.ceil(first.retry_after or 1))
        return ServeError(429, f"the upstream model server is rate limiting: {detail}",
                          type="rate_limit_error", code="upstream_rate_limited",
                          headers={"Retry-After": str(retry_after)})
    return ServeError(502, f"the upstream model server failed: {detail}",
                      type="upstream_error", code="upstream_failed")
