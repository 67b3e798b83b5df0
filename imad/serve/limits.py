"""The routing server's admission limits: request size, running pipelines and the wait before them.

An oversized body is rejected from its Content-Length before it is read, and a chunked body as
soon as it grows past the limit, so a client cannot make the server buffer more than
`max_request_bytes`. At most `max_concurrency` pipelines run; beyond them requests wait in a
bounded queue (`max_queue`), first come first served, and get 429 with Retry-After only when the
queue is full or their wait passes `queue_timeout_s`: a short burst is absorbed, a sustained
overload is refused at once instead of turning into timeouts the client cannot tell apart.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import TYPE_CHECKING

from imad.errors import ServeError

if TYPE_CHECKING:
    from starlette.requests import Request


class AdmissionQueue:
    """At most `limit` slots taken at once, and at most `max_queue` requests waiting for one.

    `acquire` runs on the event loop; `release` may run in any thread (the worker thread that
    ran the pipeline gives its slot back when the work has really ended). A released slot goes
    straight to the oldest waiter, so a newcomer cannot overtake the queue.
    """

    def __init__(self, limit: int, max_queue: int, queue_timeout_s: float, retry_after_s: int) -> None:
        self.limit = limit
        self.max_queue = max_queue
        self.queue_timeout_s = queue_timeout_s
        self.retry_after_s = retry_after_s
        self._lock = threading.Lock()
        self._in_use = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def in_use(self) -> int:
        return self._in_use

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def _refusal(self, why: str, code: str) -> ServeError:
        return ServeError(429, f"{why}; retry after {self.retry_after_s} s",
                          type="rate_limit_error", code=code,
                          headers={"Retry-After": str(self.retry_after_s)})

    async def acquire(self) -> None:
        """Take a slot, waiting in the queue if needed; ServeError 429 when the queue is full
        (`server_busy`) or the wait passed `queue_timeout_s` (`queue_timeout`)."""
        with self._lock:
            if self._in_use < self.limit:
                self._in_use += 1
                return
            if len(self._waiters) >= self.max_queue:
                raise self._refusal(f"the server is running its maximum of {self.limit} requests "
                                    f"and {self.max_queue} more are waiting", "server_busy")
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, self.queue_timeout_s)
        except (asyncio.TimeoutError, asyncio.CancelledError) as error:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
            if isinstance(error, asyncio.CancelledError):
                raise
            raise self._refusal(f"the request waited {self.queue_timeout_s:g} s for one of the "
                                f"server's {self.limit} slots (--queue-timeout)",
                                "queue_timeout") from None

    def release(self) -> None:
        """Give a slot back (thread-safe): to the oldest waiter if there is one."""
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    try:
                        waiter.get_loop().call_soon_threadsafe(self._hand_over, waiter)
                        return
                    except RuntimeError:  # its loop is closed (shutdown): nobody waits there
                        continue
            self._in_use -= 1

    def _hand_over(self, waiter: asyncio.Future[None]) -> None:
        """On the waiter's loop: pass it the slot, or pass the slot on if it stopped waiting."""
        if waiter.done():
            self.release()
        else:
            waiter.set_result(None)


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
