"""The end-to-end benchmark's LLM calls: cached, counted, and reused where already paid for.

- `open_call_cache`: every call goes through one SQLite record/replay cache
  (`imad.llm.cache.CachedChat`), so an interrupted run resumes where it stopped and a rerun
  costs nothing. Replay mode refuses a missing cache or one recorded with another model
  (the model id is part of every key, so nothing would ever hit).
- `prime_from_corpus`: self-critique answers the calibration run already cached in the corpus
  (`<corpus>/<model>/eval/<dataset>.jsonl`) are copied into the call cache when they answer
  exactly the request iMAD would send (same model, prompt version, decoding, question), so the
  iMAD methods do not pay for them again.
- `MeteredChat`: counts the tokens of every call a method makes — replayed or not, truncated
  or not — so tokens per question are the sum over calls, whatever the method's own accounting
  drops (e.g. a debate that failed half-way).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from imad.corpus_records import read_records
from imad.critique.call import SelfCritique
from imad.errors import ConfigError, LLMError, ReplayMissError, TruncatedResponseError
from imad.llm.batch import run_batch
from imad.llm.cache import CachedChat
from imad.llm.types import ChatModel, ChatRequest, ChatResponse
from imad.question import Question
from training.evaluation.responses import eval_corpus_path

CACHE_FLAG = "--e2e-cache"


def recorded_models(path: Path) -> list[str]:
    """The model ids that have responses in the cache file at `path` (sorted)."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = connection.execute("SELECT DISTINCT model FROM responses").fetchall()
    except sqlite3.DatabaseError as error:
        raise ConfigError(f"cache ({CACHE_FLAG})", f"{path} is not a call cache ({error})") from error
    finally:
        connection.close()
    return sorted(row[0] for row in rows)


def open_call_cache(model: ChatModel, path: str | Path, mode: str) -> CachedChat:
    """`model` behind the cache at `path`; in replay mode, check the cache can answer."""
    path = Path(path)
    if mode == "replay":
        if not path.is_file():
            raise ConfigError(f"cache ({CACHE_FLAG})", f"{path} does not exist: nothing to replay; "
                              "record it first (run without --e2e-cache-mode replay)")
        models = recorded_models(path)
        if model.model_id not in models:
            raise ConfigError(f"cache ({CACHE_FLAG})", f"{path} holds calls of "
                              f"{models or 'no model'}, not of {model.model_id!r}; pass the "
                              "recorded model with --llm, or another cache")
    return CachedChat(model, path, mode=mode)


def prime_from_corpus(cache: CachedChat, critique: SelfCritique, questions: Sequence[Question],
                      corpus_dir: str | Path, dataset: str) -> int:
    """Copy fitting self-critique answers from the evaluation corpus into `cache`; return how
    many were copied (answers already in the cache are left alone)."""
    path = eval_corpus_path(corpus_dir, cache.model_id, dataset)
    if not path.is_file() or critique.wants_logprobs:  # the corpus keeps no log-probs
        return 0
    records = {r.question_id: r for r in read_records(path)}
    decoding = critique.decoding_params()
    copied = 0
    for question in questions:
        record = records.get(question.id)
        fits = (record is not None and record.model_id == cache.model_id
                and record.prompt_version == critique.prompt_version
                and record.decoding == decoding and record.gold == question.gold
                and record.question.get("text") == question.text
                and list(record.question.get("choices") or []) == list(question.choices))
        if not fits:
            continue
        request = critique.request(question)
        if cache.lookup(request) is not None:
            continue
        cache.store(request, ChatResponse(
            text=record.raw_response, model=record.model_id, prompt_tokens=record.prompt_tokens,
            completion_tokens=record.completion_tokens, finish_reason=record.finish_reason,
            latency_s=record.latency_s))
        copied += 1
    return copied


@dataclass
class CallUsage:
    """What the calls of one question cost."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_seconds: float = 0.0
    """Sum of the calls' recorded latencies (kept by the cache, so replays report them too)."""
    failed_calls: int = 0
    """Calls that raised an LLMError other than a truncation (no tokens are known)."""
    replay_misses: int = 0


@dataclass
class MeteredChat:
    """A chat model that adds every call's tokens to `usage` (read and reset with `take`)."""

    inner: ChatModel
    max_concurrency: int = 1
    usage: CallUsage = field(default_factory=CallUsage)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def supports_json_schema(self) -> bool:
        return self.inner.supports_json_schema

    @property
    def supports_logprobs(self) -> bool:
        return self.inner.supports_logprobs

    def chat(self, request: ChatRequest) -> ChatResponse:
        try:
            response = self.inner.chat(request)
        except TruncatedResponseError as error:
            self._add(error.response)
            raise
        except ReplayMissError:
            self._fail(replay_miss=True)
            raise
        except LLMError:
            self._fail(replay_miss=False)
            raise
        self._add(response)
        return response

    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse | Exception]:
        return run_batch(self.chat, requests, max_concurrency=self.max_concurrency)

    def take(self) -> CallUsage:
        """The usage since the last `take`, and start counting afresh."""
        with self._lock:
            usage, self.usage = self.usage, CallUsage()
        return usage

    def _add(self, response: ChatResponse) -> None:
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += response.prompt_tokens
            self.usage.completion_tokens += response.completion_tokens
            self.usage.model_seconds += response.latency_s

    def _fail(self, *, replay_miss: bool) -> None:
        with self._lock:
            self.usage.calls += 1
            self.usage.failed_calls += 1
            self.usage.replay_misses += int(replay_miss)
