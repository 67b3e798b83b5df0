"""On-disk record/replay cache for any chat model.

Keyed by the SHA-256 of the model id and the full request (`ChatRequest.cache_key`), stored in
SQLite with WAL journaling so several processes and threads can record into one file at once
(`INSERT OR IGNORE`: the first writer of a key wins, later identical answers are dropped, none
is lost). Modes:
- "record": replay a hit, otherwise call the model and store the answer;
- "replay": replay a hit, otherwise raise `ReplayMissError` (reproducible evaluation, tests);
- "refresh": always call the model and overwrite the stored answer.
Truncated answers are stored too, and replayed as the same `TruncatedResponseError`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from imad.constraints import Constraints, InstanceOf, Options, Text, check_fields
from imad.errors import ConfigError, ReplayMissError, TruncatedResponseError
from imad.llm.batch import run_batch
from imad.llm.context import check_fits
from imad.llm.types import ChatModel, ChatRequest, ChatResponse

CACHE_MODES = ("record", "replay", "refresh")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


@dataclass
class CachedChat:
    """Wraps `inner` with a persistent cache at `path`. Counts `hits` and `misses`.

    Replaying without a model (`inner=None`) needs the recorded `replay_model_id`, since the
    model id is part of every key.
    """

    inner: ChatModel | None
    path: str | Path
    mode: str = "record"
    replay_model_id: str | None = None
    hits: int = field(default=0, init=False)
    misses: int = field(default=0, init=False)

    constraints: ClassVar[Constraints] = {
        "inner": (None, InstanceOf(ChatModel)),
        "path": Text(path=True),
        "mode": Options(*CACHE_MODES),
        "replay_model_id": (None, Text(max_chars=256)),
    }

    def __post_init__(self) -> None:
        check_fields(self, label=str)
        if self.inner is None and self.mode != "replay":
            raise ConfigError("inner", "a chat model is needed unless mode='replay'")
        if self.inner is None and not self.replay_model_id:
            raise ConfigError("replay_model_id", "name the recorded model when replaying without one")
        self.path = Path(self.path)
        if self.path.is_dir():
            raise ConfigError("cache path", f"{self.path} is a directory; name a file, e.g. "
                                            f"{self.path / 'calls.sqlite'}")
        self._local = threading.local()
        self._counter_lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connection() as connection:
                connection.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as error:  # not a database, unwritable, a file as folder
            raise ConfigError("cache path", f"cannot open {self.path} as SQLite: {error}") \
                from error

    @property
    def model_id(self) -> str:
        return self.inner.model_id if self.inner is not None else str(self.replay_model_id)

    @property
    def supports_json_schema(self) -> bool:
        return self.inner.supports_json_schema if self.inner is not None else True

    @property
    def supports_logprobs(self) -> bool:
        return self.inner.supports_logprobs if self.inner is not None else True

    def _connection(self) -> sqlite3.Connection:
        """One connection per thread (sqlite3 connections must not cross threads)."""
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA busy_timeout=60000")
            self._local.connection = connection
        return connection

    def close(self) -> None:
        """Close this thread's connection, so the file can be checkpointed, copied or deleted."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def lookup(self, request: ChatRequest) -> ChatResponse | None:
        key = request.cache_key(self.model_id)
        row = self._connection().execute("SELECT response FROM responses WHERE key = ?",
                                         (key,)).fetchone()
        return None if row is None else ChatResponse.from_dict(json.loads(row[0]))

    def store(self, request: ChatRequest, response: ChatResponse) -> None:
        verb = "INSERT OR REPLACE" if self.mode == "refresh" else "INSERT OR IGNORE"
        self._connection().execute(
            f"{verb} INTO responses (key, model, request, response, created) VALUES (?, ?, ?, ?, ?)",
            (request.cache_key(self.model_id), self.model_id,
             json.dumps(request.to_dict(), sort_keys=True, ensure_ascii=False),
             json.dumps(response.to_dict(), ensure_ascii=False), time.time()),
        )

    def check_fits(self, request: ChatRequest) -> None:
        """The inner model's context check (none when replaying without a model)."""
        if self.inner is not None:
            check_fits(self.inner, request)

    def chat(self, request: ChatRequest) -> ChatResponse:
        cached = None if self.mode == "refresh" else self.lookup(request)
        if cached is not None:
            self._count(hit=True)
            return _raise_if_truncated(cached)
        if self.mode == "replay" or self.inner is None:
            raise ReplayMissError(request.cache_key(self.model_id), str(self.path))
        self._count(hit=False)
        try:
            response = self.inner.chat(request)
        except TruncatedResponseError as error:
            self.store(request, error.response)
            raise
        self.store(request, response)
        return response

    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse | Exception]:
        concurrency = getattr(self.inner, "max_concurrency", 1)
        return run_batch(self.chat, requests, max_concurrency=concurrency)

    def __len__(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def _count(self, *, hit: bool) -> None:
        with self._counter_lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1


def _raise_if_truncated(response: ChatResponse) -> ChatResponse:
    if response.truncated:
        raise TruncatedResponseError(response)
    return response
