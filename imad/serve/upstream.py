"""Telling an upstream model-server failure apart from a bad answer (502 / 504 vs 200).

The pipeline never raises for a failed LLM call: it records the error as text and escalates or
falls back, which is right for batch evaluation but hides from an HTTP client *why* no answer
came. `UpstreamWatch` wraps the chat model for one request and keeps every `LLMError` it saw, so
the server can answer a pipeline that produced nothing with the upstream's own typed error:
504 for a timeout, 502 for a dropped connection, a 5xx or an unusable reply. It also reports
each call's duration and error to `on_call` (the server's metrics).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from urllib.parse import parse_qsl

from imad.errors import (
    LLMError,
    LLMRateLimitError,
    LLMTimeoutError,
    ServeError,
    TruncatedResponseError,
)
from imad.llm.batch import run_batch
from imad.llm.context import check_fits
from imad.llm.types import ChatModel, ChatRequest, ChatResponse


class UpstreamWatch:
    """A chat model that forwards to `inner` and records the `LLMError`s of its calls.

    Truncated answers are not failures of the server (the model answered), so they are passed
    on without being recorded. One instance serves one request; it is thread-safe because a
    debate round sends its calls concurrently.
    """

    def __init__(self, inner: ChatModel,
                 on_call: Callable[[float, BaseException | None], None] | None = None) -> None:
        self.inner = inner
        self.on_call = on_call
        self.max_concurrency = upstream_concurrency(inner)
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
        started = time.perf_counter()
        failure: BaseException | None = None
        try:
            return self.inner.chat(request)
        except LLMError as error:
            failure = error
            self._record(error)
            raise
        finally:
            if self.on_call is not None:
                self.on_call(time.perf_counter() - started, failure)

    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse | Exception]:
        """Each request through `chat` (so each is timed and recorded), as concurrently as the
        upstream client allows."""
        return run_batch(self.chat, requests, max_concurrency=self.max_concurrency)


def upstream_concurrency(model: ChatModel) -> int:
    """How many calls `model` sends at once: its `max_concurrency`, looking through wrappers
    (`inner`) such as a cache; 1 for a model without one (llama.cpp runs one call at a time)."""
    while model is not None:
        limit = getattr(model, "max_concurrency", None)
        if isinstance(limit, int):
            return limit
        model = getattr(model, "inner", None)
    return 1


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


def spec_with_concurrency(spec: str, max_concurrency: int) -> str:
    """The `--llm` spec with the server's `--max-concurrency` as the upstream client's limit.

    Only an `openai:` spec has such a limit (llama.cpp runs one call at a time). A spec that
    sets `max_concurrency` itself keeps it: the smaller of the two limits then governs, and
    /health shows both. Without this, the client's default (4) would cap a server of 32 slots.
    """
    inner = spec.strip().rpartition("::")[2] if spec.strip().startswith("cached:") else spec.strip()
    head, _, query = inner.partition("?")
    if not head.startswith("openai:"):
        return spec
    if any(key == "max_concurrency" for key, _ in parse_qsl(query, keep_blank_values=True)):
        return spec
    return f"{spec.strip()}{'&' if '?' in inner else '?'}max_concurrency={max_concurrency}"
