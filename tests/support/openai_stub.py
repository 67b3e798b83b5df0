"""A loopback OpenAI-compatible chat server that answers with recorded-style self-critiques.

Self-critique requests (their JSON schema has a `critique` field) get a valid critique; any other
call (a debate back-end's) gets a one-option answer. With `barrier_parties=N` every self-critique
request waits until N of them are in flight at once, so a test can force N `imad ask` runs to be
inside their LLM call together, without sleeping. `requests` counts the calls received. With
`raw_body`, every call is answered HTTP 200 with those bytes instead (a broken upstream); with
`critique_content` / `debate_content`, those message contents replace the valid ones (an
unparseable self-critique, debate agents that give no answer).
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

CRITIQUE = {"initial_answer": "D", "initial_reasoning": "Morphine is an opioid agonist.",
            "critique": "The reasoning holds; no other option is an opioid.",
            "alternative_answer": "A", "final_answer": "D", "confidence_initial": 80,
            "confidence_critique": 70}
DEBATE_ANSWER = {"answer": "D", "reasoning": "Because D.", "confidence": 0.9}
BARRIER_TIMEOUT_S = 120.0
"""Bounds a broken test (fewer runs than parties), never a passing one."""


class StubState:
    def __init__(self, barrier_parties: int | None, raw_body: bytes | None = None,
                 contents: tuple[str, str] | None = None) -> None:
        self.barrier = threading.Barrier(barrier_parties) if barrier_parties else None
        self.raw_body = raw_body
        self.contents = contents or (json.dumps(CRITIQUE), json.dumps(DEBATE_ANSWER))
        self.requests = 0
        self.lock = threading.Lock()


def _handler(state: StubState) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            with state.lock:
                state.requests += 1
            if state.raw_body is not None:
                self._send(state.raw_body)
                return
            is_critique = "critique" in json.dumps(body.get("response_format"))
            if is_critique and state.barrier is not None:
                state.barrier.wait(BARRIER_TIMEOUT_S)
            content = state.contents[0] if is_critique else state.contents[1]
            reply = json.dumps({
                "id": "stub", "object": "chat.completion", "model": body.get("model", "m"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }).encode("utf-8")
            self._send(reply)

        def _send(self, reply: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def openai_stub(*, barrier_parties: int | None = None, raw_body: bytes | None = None,
                critique_content: str | None = None,
                debate_content: str | None = None) -> Iterator[tuple[str, StubState]]:
    """Serve on a free loopback port; yield (the `--llm` spec for it, its state)."""
    contents = (json.dumps(CRITIQUE) if critique_content is None else critique_content,
                json.dumps(DEBATE_ANSWER) if debate_content is None else debate_content)
    state = StubState(barrier_parties, raw_body, contents)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"openai:m@http://127.0.0.1:{server.server_address[1]}/v1?max_retries=0", state
    finally:
        server.shutdown()
        server.server_close()
