"""What `imad ask` is waiting for, on stderr, while a person watches the terminal.

On the embedded model one question can take minutes on a loaded machine (loading the model, the
self-critique, each debate round), and a silent terminal reads as a hang. `ProgressChat` wraps
the chat model and writes one line as each stage starts: the self-critique (whose first call
also loads a local model), then each debate round (a debate sends one batch of calls per
round). Only when stderr is a terminal (`progress_stream`): a pipe, a log file or a test keeps
exactly the output it had, and stdout is never touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

from imad.llm.types import ChatModel, ChatRequest, ChatResponse


def progress_stream(stream: TextIO) -> TextIO | None:
    """`stream` when it is a terminal (a person watches it), else None."""
    try:
        return stream if stream.isatty() else None
    except (AttributeError, ValueError):  # replaced or closed
        return None


class ProgressChat:
    """A chat model (`ChatModel`) that says on `stream` which stage each call belongs to."""

    def __init__(self, model: ChatModel, stream: TextIO, prog: str = "imad ask") -> None:
        self.model = model
        self.model_id = model.model_id
        self.supports_json_schema = model.supports_json_schema
        self.supports_logprobs = model.supports_logprobs
        self._stream = stream
        self._prog = prog
        self._calls = 0
        self._rounds = 0

    def chat(self, request: ChatRequest) -> ChatResponse:
        if self._calls == 0:
            self._say(f"self-critique: asking {self.model_id} (its first call also loads a local "
                      "model)…")
        else:
            self._say(f"call {self._calls + 1} to {self.model_id}…")
        self._calls += 1
        return self.model.chat(request)

    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse | Exception]:
        self._rounds += 1
        self._calls += len(requests)
        self._say(f"debate round {self._rounds}: {len(requests)} call(s) to {self.model_id}…")
        return self.model.chat_batch(requests)

    def __getattr__(self, name: str) -> Any:
        """Everything else (a local model's `prompt_tokens`, `check_fits`) is the model's own."""
        return getattr(self.model, name)

    def _say(self, text: str) -> None:
        print(f"{self._prog}: {text}", file=self._stream, flush=True)


__all__ = ["ProgressChat", "progress_stream"]
