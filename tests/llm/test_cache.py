"""Record/replay cache: identical replays without model calls; concurrent writers lose nothing."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from imad.errors import ConfigError, ReplayMissError, TruncatedResponseError
from imad.llm.cache import CachedChat
from imad.llm.scripted import ScriptedChat
from imad.llm.types import ChatRequest, ChatResponse, user_prompt


def request(text: str, **kwargs) -> ChatRequest:
    return ChatRequest(user_prompt(text), **kwargs)


def echo(req: ChatRequest) -> str:
    return f"echo: {req.messages[-1].text}"


def test_record_then_replay_is_identical_without_calls(tmp_path):
    inner = ScriptedChat(echo)
    recorder = CachedChat(inner, tmp_path / "c.sqlite")
    first = recorder.chat(request("hi"))
    assert len(inner.calls) == 1 and recorder.misses == 1
    replayer = CachedChat(None, tmp_path / "c.sqlite", mode="replay", replay_model_id="scripted")
    assert replayer.chat(request("hi")) == first
    assert recorder.chat(request("hi")) == first
    assert len(inner.calls) == 1 and recorder.hits == 1


def test_key_covers_the_whole_request(tmp_path):
    inner = ScriptedChat(echo)
    cache = CachedChat(inner, tmp_path / "c.sqlite")
    cache.chat(request("hi"))
    cache.chat(request("hi", temperature=0.7))
    cache.chat(request("hi", json_schema={"type": "string"}))
    cache.chat(request("hi", seed=5))
    assert len(inner.calls) == 4 and len(cache) == 4


def test_replay_miss_is_a_clear_error(tmp_path):
    cache = CachedChat(None, tmp_path / "c.sqlite", mode="replay", replay_model_id="scripted")
    with pytest.raises(ReplayMissError, match="replay-only"):
        cache.chat(request("never recorded"))


def test_bad_mode_and_missing_model(tmp_path):
    with pytest.raises(ConfigError, match="mode"):
        CachedChat(ScriptedChat(echo), tmp_path / "c.sqlite", mode="sometimes")
    with pytest.raises(ConfigError, match="inner"):
        CachedChat(None, tmp_path / "c.sqlite", mode="record")
    with pytest.raises(ConfigError, match="replay_model_id"):
        CachedChat(None, tmp_path / "c.sqlite", mode="replay")


class Truncating(ScriptedChat):
    def chat(self, req):
        self.calls.append(req)
        raise TruncatedResponseError(ChatResponse("partial", "scripted", 3, 4, "length", 0.0))


def test_truncated_answers_are_kept_and_replayed_as_truncated(tmp_path):
    inner = Truncating(echo)
    cache = CachedChat(inner, tmp_path / "c.sqlite")
    for _ in range(2):
        with pytest.raises(TruncatedResponseError) as caught:
            cache.chat(request("long"))
        assert caught.value.response.text == "partial"
    assert len(inner.calls) == 1


def test_concurrent_threads_lose_nothing(tmp_path):
    cache = CachedChat(ScriptedChat(echo), tmp_path / "c.sqlite")
    threads = [threading.Thread(target=lambda i=i: [cache.chat(request(f"t{i}-{j}")) for j in range(25)])
               for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 200


def _write_many(path: str, worker: int) -> None:
    cache = CachedChat(ScriptedChat(echo), path)
    for j in range(40):
        cache.chat(request(f"p{worker}-{j}"))
        cache.chat(request(f"shared-{j}"))  # every process writes these same keys


def test_concurrent_processes_lose_nothing(tmp_path):
    path = str(tmp_path / "c.sqlite")
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_write_many, args=(path, i)) for i in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
    cache = CachedChat(None, path, mode="replay", replay_model_id="scripted")
    assert len(cache) == 4 * 40 + 40
    assert cache.chat(request("p3-39")).text == "echo: p3-39"
