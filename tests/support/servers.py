"""Real loopback servers for tests: llama-cpp-python's OpenAI server and a fault-injecting proxy.

The proxy sits between the client and the real server. Each incoming request takes the next
fault from its queue (or "pass" when the queue is empty):
- "pass": forward to the upstream server unchanged;
- "429": answer 429 with `Retry-After: <retry_after>`;
- "500": answer 500 with a short text body;
- "hang": accept the request and answer nothing for `hang_s` seconds;
- "drop": close the connection without answering;
- "not_json": answer 200 with an HTML body;
- "cut_body": forward, then send only half of the upstream body before closing.
Every request the proxy saw is logged in `seen` (fault name, arrival time) so tests can check
retries and their spacing. Loopback only; all loops are bounded.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def llama_server(model_path: Path, *, n_ctx: int = 2048, threads: int = 2,
                 startup_timeout: float = 120.0) -> Iterator[str]:
    """Run `python -m llama_cpp.server` on a free loopback port; yield its /v1 base URL."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
               "--n_threads", str(threads), "--logits_all", "true"]
    log = open(os.devnull, "wb")  # noqa: SIM115 - closed in finally
    process = subprocess.Popen(command, stdout=log, stderr=log)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with code {process.returncode}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not start within {startup_timeout} s")
            time.sleep(0.2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


class FaultProxy:
    """A threaded HTTP proxy on loopback that injects the queued faults (module docstring)."""

    def __init__(self, upstream: str, *, retry_after: float = 1.0, hang_s: float = 5.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.retry_after = retry_after
        self.hang_s = hang_s
        self.faults: deque[str] = deque()
        self.seen: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def queue(self, *faults: str) -> None:
        with self._lock:
            self.faults.extend(faults)
            self.seen.clear()

    def _next_fault(self) -> str:
        with self._lock:
            fault = self.faults.popleft() if self.faults else "pass"
            self.seen.append((fault, time.monotonic()))
            return fault

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fault = proxy._next_fault()
                if fault == "429":
                    self._reply(429, b'{"error": "slow down"}',
                                {"Retry-After": f"{proxy.retry_after:g}"})
                elif fault == "500":
                    self._reply(500, b"internal error")
                elif fault == "hang":
                    time.sleep(proxy.hang_s)
                    self.close_connection = True
                elif fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif fault == "not_json":
                    self._reply(200, b"<html>gateway maintenance</html>",
                                {"Content-Type": "text/html"})
                else:
                    upstream = httpx.post(proxy.upstream + self.path.removeprefix("/v1"),
                                          content=body, timeout=120,
                                          headers={"Content-Type": "application/json"})
                    if fault == "cut_body":
                        self.send_response(upstream.status_code)
                        self.send_header("Content-Length", str(len(upstream.content)))
                        self.end_headers()
                        self.wfile.write(upstream.content[: len(upstream.content) // 2])
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                    else:
                        self._reply(upstream.status_code, upstream.content,
                                    {"Content-Type": "application/json"})

        return Handler
