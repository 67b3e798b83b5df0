"""`stream: true`: the finished answer as server-sent events in OpenAI's chunk format.

The pipeline must finish before its answer is known (the router judges the whole answer), so
streaming does not lower the time to the first token; it lets streaming clients use the server
unchanged. Errors therefore still arrive as ordinary HTTP statuses, before any event. Events: a
role chunk, the content in pieces of `CHUNK_CHARS`, a final chunk with `finish_reason` and the
`imad` decision, a usage chunk when `stream_options.include_usage` is set, then `data: [DONE]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from imad.serve.openai.protocol import ChatCompletion, ChatCompletionChunk, ChunkChoice, Delta
from imad.serve.openai.strict_json import strict_json

CHUNK_CHARS = 32


def completion_chunks(completion: ChatCompletion, *, include_usage: bool) -> list[ChatCompletionChunk]:
    """The chunks that spell out `completion`, in order."""
    head = {"id": completion.id, "created": completion.created, "model": completion.model,
            "system_fingerprint": completion.system_fingerprint}
    content = completion.choices[0].message.content
    pieces = [content[i:i + CHUNK_CHARS] for i in range(0, len(content), CHUNK_CHARS)]
    chunks = [ChatCompletionChunk(**head, choices=[ChunkChoice(delta=Delta(role="assistant", content=""))])]
    chunks += [ChatCompletionChunk(**head, choices=[ChunkChoice(delta=Delta(content=piece))])
               for piece in pieces]
    chunks.append(ChatCompletionChunk(**head, choices=[ChunkChoice(delta=Delta(), finish_reason="stop")],
                                      imad=completion.imad))
    if include_usage:
        chunks.append(ChatCompletionChunk(**head, choices=[], usage=completion.usage))
    return chunks


def _event(chunk: ChatCompletionChunk) -> str:
    data: dict[str, Any] = chunk.model_dump(exclude_none=True)
    if chunk.imad is not None:  # keep the decision's nulls (p, error), as in a plain completion
        data["imad"] = chunk.imad.model_dump()
    return f"data: {strict_json(data)}\n\n"


def sse_events(completion: ChatCompletion, *, include_usage: bool) -> Iterator[str]:
    """The server-sent events of a streamed completion, ending with `data: [DONE]`."""
    for chunk in completion_chunks(completion, include_usage=include_usage):
        yield _event(chunk)
    yield "data: [DONE]\n\n"
