"""Run many chat requests with bounded concurrency, keeping every result or error in order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from imad.errors import ImadError
from imad.llm.types import ChatRequest, ChatResponse


def run_batch(call: Callable[[ChatRequest], ChatResponse], requests: Sequence[ChatRequest],
              max_concurrency: int) -> list[ChatResponse | Exception]:
    """Call `call` on each request, at most `max_concurrency` at a time.

    A failed request yields its exception in its slot instead of aborting the batch, so one bad
    question never loses the answers to the others.
    """

    def guarded(request: ChatRequest) -> ChatResponse | Exception:
        try:
            return call(request)
        except ImadError as error:
            return error

    if max_concurrency <= 1 or len(requests) <= 1:
        return [guarded(r) for r in requests]
    with ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="imad-chat") as pool:
        return list(pool.map(guarded, requests))
