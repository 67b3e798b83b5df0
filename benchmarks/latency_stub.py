"""A loopback OpenAI-compatible upstream that answers every call after a fixed latency.

    python benchmarks/latency_stub.py --port 0 --latency 0.2 --port-file PATH

The upstream of `bench_serve.py`, run in its own process so its CPU is not the server's. Each
POST /v1/chat/completions waits `--latency` seconds (asyncio, so any number of calls wait at
once) and answers with content that echoes the tag `#N` of the question's last user message:
a self-critique (its JSON schema has a `critique` field) whose answers are N, or a debate reply
filling the schema's fields (answer N, confidences 90). The server's answer to request N must
therefore be N, which lets the benchmark catch lost or crossed responses. GET /count reports
the calls received (to measure upstream calls per request). The bound port is written to
`--port-file` once the server listens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path

from aiohttp import web

TAG = re.compile(r"#(\d+)")
REASONING = ("The question names a tag, and the tag printed after the hash sign is {tag}. "
             "Reading the digits one by one gives the same number, so the answer is {tag}.")
CRITIQUE = ("One might misread a digit or take the number for a different kind of label, but "
            "the question asks only for the tag and nothing in it points elsewhere.")


def tag_of(messages: list[dict]) -> str:
    """The tag of the last user message that has one, or "0"."""
    for message in reversed(messages):
        content = message.get("content")
        found = TAG.search(content) if isinstance(content, str) else None
        if message.get("role") == "user" and found:
            return found.group(1)
    return "0"


def critique_for(tag: str) -> dict:
    """The self-critique the stub answers for `tag` (bench_serve.py featurizes the same text)."""
    return {"initial_answer": tag, "initial_reasoning": REASONING.format(tag=tag),
            "critique": CRITIQUE, "alternative_answer": "0", "final_answer": tag,
            "confidence_initial": 90, "confidence_critique": 15}


def content_for(body: dict) -> str:
    tag = tag_of(body.get("messages") or [])
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema") or response_format.get("schema") or {}
    properties = schema.get("properties") or {}
    if "critique" in properties or not properties:
        return json.dumps(critique_for(tag))
    return json.dumps({name: (tag if name == "answer" else 90 if "confidence" in name else f"It is {tag}.")
                       for name in properties})


def make_app(latency_s: float) -> web.Application:
    calls = 0

    async def completions(request: web.Request) -> web.Response:
        nonlocal calls
        calls += 1
        body = await request.json()
        await asyncio.sleep(latency_s)
        return web.json_response({
            "id": f"stub-{calls}", "object": "chat.completion", "model": body.get("model", "stub"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content_for(body)}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 60, "total_tokens": 160}})

    async def count(_: web.Request) -> web.Response:
        return web.json_response({"calls": calls})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/count", count)
    return app


async def serve(port: int, latency_s: float, port_file: Path) -> None:
    runner = web.AppRunner(make_app(latency_s), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=2048)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # noqa: SLF001 (aiohttp has no public getter)
    port_file.write_text(str(bound), encoding="utf-8")
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call")
    parser.add_argument("--port-file", type=Path, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.latency, args.port_file))


if __name__ == "__main__":
    main()
