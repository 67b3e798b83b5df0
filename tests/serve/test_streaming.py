"""SSE chunks spell out the answer in OpenAI's format and end with `data: [DONE]`."""

from __future__ import annotations

import json

from imad.serve.openai.protocol import AssistantMessage, ChatCompletion, Choice, ImadInfo, Usage
from imad.serve.openai.streaming import CHUNK_CHARS, sse_events


def completion(content: str) -> ChatCompletion:
    info = ImadInfo(p=None, tau=0.7, escalated=True, backend="acemad", source="debate", reasons=["r"],
                    parse_status="unparsed", llm_calls=3, error=None, upstream_model="m",
                    tau_source="checkpoint", ood_score=None, ood=None, ood_policy="flag",
                    would_escalate=None,
                    router_name="imad-router-v2", router_version=None, router_hash="0" * 64,
                    certificate=None)
    return ChatCompletion(id="chatcmpl-1", created=1, model="imad", system_fingerprint="imad-0",
                          choices=[Choice(message=AssistantMessage(content=content))],
                          usage=Usage(prompt_tokens=5, completion_tokens=2, total_tokens=7), imad=info)


def parse(events):
    assert all(e.startswith("data: ") and e.endswith("\n\n") for e in events)
    assert events[-1] == "data: [DONE]\n\n"
    return [json.loads(e[len("data: "):]) for e in events[:-1]]


def test_long_answer_is_split_and_rejoined():
    answer = "a long answer " * 10
    chunks = parse(list(sse_events(completion(answer), include_usage=False)))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    pieces = [c["choices"][0]["delta"].get("content", "") for c in chunks]
    assert "".join(pieces) == answer and max(map(len, pieces)) == CHUNK_CHARS
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == "chatcmpl-1" for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and "usage" not in chunks[-1]
    assert chunks[-1]["imad"]["p"] is None and chunks[-1]["imad"]["error"] is None  # nulls kept


def test_usage_chunk_when_asked_and_empty_answer():
    chunks = parse(list(sse_events(completion(""), include_usage=True)))
    assert len(chunks) == 3
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == {"prompt_tokens": 5, "completion_tokens": 2,
                                                                  "total_tokens": 7}
