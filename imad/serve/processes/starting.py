"""The port's answer while `imad serve` starts: 503 `server_starting` at once, never a held
connection.

The port is bound before anything loads, so a port in use is an error at once. Loading the
router, the chat model, the feature extractor and the scoring processes then takes seconds on
an idle machine and a minute on a busy one; a connection made meanwhile would sit in the listen
backlog unanswered, and a client or load balancer could not tell a starting server from a hung
one. `StartingResponder` answers those connections from a thread: every request gets 503 with
`Retry-After` — `/health` a `{"status": "starting"}` body a readiness probe can read, any other
path OpenAI's error shape — until the app takes the socket over (`stop`, or under `--workers`
once the first worker says it is ready: `ready()` turns true).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable

from imad import __version__
from imad.errors import ServeError

POLL_S = 0.05
"""How often the thread looks at `ready()` while no connection comes."""
READ_LIMIT_BYTES = 65_536
"""Most of a request read before answering (its headers; a body is not needed to refuse it)."""
CLIENT_TIMEOUT_S = 1.0
"""How long one connection may take to send its request line and headers."""
DRAIN_S = 0.2
"""How long a silent client's connection stays open after the 503 (its body may still come)."""
DRAIN_LIMIT_S = 2.0
"""Longest the rest of a refused request (its body) is read before the connection closes."""
RETRY_AFTER_S = 1


def starting_error() -> ServeError:
    """The refusal of a request that arrives before the server is ready."""
    return ServeError(503, "imad serve is starting (loading the router, the chat model and the "
                           f"feature extractor); retry in {RETRY_AFTER_S} s", type="server_error",
                      code="server_starting", headers={"Retry-After": str(RETRY_AFTER_S)})


def starting_reply(request_head: bytes) -> bytes:
    """The whole HTTP/1.1 response to the request whose head is `request_head`."""
    line = request_head.split(b"\r\n", 1)[0].split(b" ")
    method, path = (line[0], line[1].split(b"?", 1)[0]) if len(line) >= 2 else (b"", b"")
    error = starting_error()
    body = (json.dumps({"status": "starting", "version": __version__}) if path == b"/health"
            else json.dumps(error.to_body())).encode()
    head = [f"HTTP/1.1 {error.status} Service Unavailable", "Content-Type: application/json",
            f"Content-Length: {len(body)}", "Connection: close",
            *(f"{name}: {value}" for name, value in error.headers.items())]
    return "\r\n".join(head).encode() + b"\r\n\r\n" + (b"" if method == b"HEAD" else body)


class StartingResponder:
    """Answers the listening `sock` with 503 from a daemon thread until `stop()` or `ready()`."""

    def __init__(self, sock: socket.socket, ready: Callable[[], bool] | None = None) -> None:
        self.sock = sock
        self.ready = ready
        self.answered = 0
        """Connections answered with 503 (for the log)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="imad-serve-starting", daemon=True)

    def start(self) -> StartingResponder:
        self.sock.setblocking(False)  # workers share the socket: one may accept first
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stop answering (the app serves the socket next); the connections answered."""
        self._stop.set()
        self._thread.join()
        return self.answered

    def _run(self) -> None:
        while not self._stop.is_set() and not (self.ready is not None and self.ready()):
            readable, _, _ = select.select([self.sock], [], [], POLL_S)
            if not readable or self._stop.is_set():
                continue
            try:
                connection, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):  # a worker accepted it first
                continue
            except OSError:  # the socket was closed: the server is stopping
                return
            with connection:
                self._answer(connection)

    def _answer(self, connection: socket.socket) -> None:
        try:
            connection.sendall(starting_reply(_read_head(connection)))
            connection.shutdown(socket.SHUT_WR)
            self.answered += 1
            _drain(connection)
        except OSError:  # the client went away: nothing to answer
            pass


def _read_head(connection: socket.socket) -> bytes:
    """The request line and headers, as far as they came within `CLIENT_TIMEOUT_S` (a client
    too slow to send them is answered all the same: the answer does not depend on them)."""
    connection.settimeout(CLIENT_TIMEOUT_S)
    head = b""
    try:
        while b"\r\n\r\n" not in head and len(head) < READ_LIMIT_BYTES:
            chunk = connection.recv(4096)
            if not chunk:
                break
            head += chunk
    except TimeoutError:
        pass
    return head


def _drain(connection: socket.socket) -> None:
    """Read what the client still sends (a request body) until it closes, is silent for
    `DRAIN_S` or `DRAIN_LIMIT_S` has passed: closing a socket with unread bytes resets the
    connection, and the client could lose the 503."""
    connection.settimeout(DRAIN_S)
    deadline = time.monotonic() + DRAIN_LIMIT_S
    try:
        while time.monotonic() < deadline and connection.recv(65_536):
            pass
    except TimeoutError:
        pass
