"""A loopback OpenAI-compatible stub that counts its calls (issue 24: "none runs a call first").

Every POST to /v1/chat/completions is counted and answered with one fixed chat completion whose
content is `reply` (by default an opening every debate back-end parses: argument, answer A,
confidence). It runs on 127.0.0.1 in a daemon thread and is stopped by the context manager.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

DEFAULT_REPLY = json.dumps({"argument": "Option A is the one the question describes.",
                            "answer": "A", "confidence": 90})


@dataclass
class StubServer:
    """What a test reads: the /v1 base URL and how many completions were requested."""

    base_url: str
    calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spec(self, options: str = "") -> str:
        """An `--llm` spec naming this server, with `?options` when given."""
        return f"openai:stub@{self.base_url}" + (f"?{options}" if options else "")


@contextmanager
def openai_stub(reply: str = DEFAULT_REPLY) -> Iterator[StubServer]:
    """Serve chat completions answering `reply` on a free loopback port."""
    state = StubServer("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with state.lock:
                state.calls += 1
            body = json.dumps({
                "id": "stub", "object": "chat.completion", "model": "stub",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": reply}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
