"""The routing server's admission limits: request size and the number of running pipelines.

Both refuse early and cheaply. An oversized body is rejected from its Content-Length before it is
read, and a chunked body as soon as it grows past the limit, so a client cannot make the server
buffer more than `max_request_bytes`. A full server answers 429 with Retry-After at once instead
of queueing: a queue would only turn overload into timeouts the client cannot tell apart.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from imad.errors import ServeError

if TYPE_CHECKING:
    from starlette.requests import Request


class ConcurrencyLimiter:
    """At most `limit` slots taken at once; `acquire` refuses (429) instead of waiting.

    Thread-safe: a slot is taken on the event loop and given back by the worker thread that ran
    the pipeline, when the work has really ended.
    """

    def __init__(self, limit: int, retry_after_s: int) -> None:
        self.limit = limit
        self.retry_after_s = retry_after_s
        self._slots = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self._in_use = 0

    @property
    def in_use(self) -> int:
        return self._in_use

    def acquire(self) -> None:
        """Take a slot, or raise ServeError 429 with Retry-After when all are taken."""
        if not self._slots.acquire(blocking=False):
            raise ServeError(429, f"the server is running its maximum of {self.limit} requests; "
                                  f"retry after {self.retry_after_s} s",
                             type="rate_limit_error", code="server_busy",
                             headers={"Retry-After": str(self.retry_after_s)})
        with self._lock:
            self._in_use += 1

    def release(self) -> None:
        with self._lock:
            self._in_use -= 1
        self._slots.release()


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The request body, or ServeError 413 as soon as it is known to exceed `max_bytes`."""
    too_large = ServeError(413, f"the request body exceeds the limit of {max_bytes:,} bytes",
                           code="request_too_large")
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise ServeError(400, f"invalid Content-Length header {declared!r}", code="invalid_header")
        if int(declared) > max_bytes:
            raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise too_large
    return bytes(body)
