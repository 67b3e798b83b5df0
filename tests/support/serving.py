"""Helpers for the routing-server tests and benchmark: a tagged echo model and a load generator.

Each question carries a tag `#N`; the scripted model answers N in the self-critique and in every
debate call, so a response can be matched to its request exactly (no lost or crossed answers).
Tokens are whitespace words (`ScriptedChat`), so usage can be checked against the calls made.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import sys
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

import httpx

from imad.llm.scripted import ScriptedChat
from imad.llm.types import ChatRequest, ChatResponse
from imad.router import Router
from imad.serve.factory import PipelineFactory
from tests.router.router_helpers import make_router

SMALL_DEBATES = {"svrmad": {"n_agents": 3, "consensus_agree": 3}, "acemad": {"n_agents": 2, "n_rounds": 1}}
_TAG = re.compile(r"#(\d+)")


def tagged_question(index: int) -> str:
    return f"Which number is tagged #{index}?"


def tag_of(request: ChatRequest) -> str:
    """The tag of the question in a request (its user messages), or "0"."""
    for message in reversed(request.messages):
        found = _TAG.search(message.text)
        if message.role == "user" and found:
            return found.group(1)
    return "0"


def echo_respond(request: ChatRequest) -> str:
    """Self-critique: a confident answer equal to the tag; debate calls: the tag again."""
    tag = tag_of(request)
    properties = (request.json_schema or {}).get("properties", {})
    if "critique" in properties or not properties:
        return json.dumps({"initial_answer": tag, "initial_reasoning": f"The tag reads {tag}.",
                           "critique": "One might misread the tag, but it is clear.",
                           "alternative_answer": "0", "final_answer": tag,
                           "confidence_initial": 90, "confidence_critique": 10})
    return json.dumps({name: (tag if name == "answer" else 90 if "confidence" in name else f"It is {tag}.")
                       for name in properties})


def echo_chat() -> ScriptedChat:
    return ScriptedChat(echo_respond)


class BlockingChat(ScriptedChat):
    """An echo model whose calls wait on `release` (set `started` first): fills server slots."""

    def __init__(self) -> None:
        super().__init__(echo_respond)
        self.started = threading.Event()
        self.release = threading.Event()

    def chat(self, request: ChatRequest) -> ChatResponse:
        self.started.set()
        if not self.release.wait(30):
            raise RuntimeError("BlockingChat was never released")
        return super().chat(request)


def echo_factory(chat: ScriptedChat | None = None, router: Router | None = None) -> PipelineFactory:
    return PipelineFactory(router or make_router(), chat or echo_chat(), SMALL_DEBATES)


@dataclass
class LoadReport:
    """Outcome of `run_load`: final statuses, latencies of the answered requests, checks."""

    n: int
    concurrency: int
    wall_s: float
    latencies_s: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    retries_429: int = 0
    wrong_answers: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    timeouts: list[int] = field(default_factory=list)
    """Requests the client gave up on (no response within its timeout)."""
    stacks_at_first_timeout: str = ""
    """Every thread of this process (the in-process server's too) when the first one timed
    out: where a wedged request was stuck, for the failure report."""

    @property
    def answered(self) -> int:
        return self.statuses[200]

    @property
    def duplicated_ids(self) -> int:
        return len(self.ids) - len(set(self.ids))

    def percentile_ms(self, q: float) -> float:
        ordered = sorted(self.latencies_s)
        return 1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    def summary(self) -> str:
        return (f"{self.n} requests, concurrency {self.concurrency}: {self.answered} answered, "
                f"statuses {dict(self.statuses)}, 429 retries {self.retries_429}, "
                f"wrong answers {len(self.wrong_answers)}, duplicated ids {self.duplicated_ids}, "
                f"client timeouts {len(self.timeouts)}\n"
                f"p50 {self.percentile_ms(0.50):.1f} ms, p99 {self.percentile_ms(0.99):.1f} ms, "
                f"mean {1000 * statistics.fmean(self.latencies_s):.1f} ms, "
                f"{self.answered / self.wall_s:.1f} requests/s ({self.wall_s:.2f} s wall)")


def run_load(base_url: str, *, n: int = 200, concurrency: int = 16,
             models: tuple[str, ...] = ("imad-svrmad-0", "imad-svrmad-1"), api_key: str = "unused",
             max_429_retries: int = 20) -> LoadReport:
    """Send `n` tagged questions, `concurrency` at a time, cycling through `models`.

    A 429 is retried after its Retry-After (the documented contract) and counted; any other
    status is final. Latency is measured per answered request, retries included.
    """

    async def main() -> LoadReport:
        report = LoadReport(n=n, concurrency=concurrency, wall_s=0.0)
        queue: asyncio.Queue[int] = asyncio.Queue()
        for index in range(n):
            queue.put_nowait(index)
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits,
                                     headers={"Authorization": f"Bearer {api_key}"}) as client:

            async def worker() -> None:
                while not queue.empty():
                    index = queue.get_nowait()
                    body = {"model": models[index % len(models)],
                            "messages": [{"role": "user", "content": tagged_question(index)}]}
                    started = time.perf_counter()
                    response = await post_retrying_429(client, body, report, max_429_retries)
                    if response is None:  # the client gave up waiting
                        report.timeouts.append(index)
                        report.stacks_at_first_timeout = report.stacks_at_first_timeout or thread_stacks()
                        continue
                    report.statuses[response.status_code] += 1
                    if response.status_code != 200:
                        continue
                    report.latencies_s.append(time.perf_counter() - started)
                    completion = response.json()
                    report.ids.append(completion["id"])
                    if (completion["choices"][0]["message"]["content"] != str(index)
                            or response.headers.get("X-Request-Id") != completion["id"]):
                        report.wrong_answers.append(index)

            clock = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            report.wall_s = time.perf_counter() - clock
        return report

    return asyncio.run(main())


async def post_retrying_429(client: httpx.AsyncClient, body: dict, report: LoadReport,
                            max_retries: int) -> httpx.Response | None:
    """The final response to `body` (each 429 counted in `report` and, up to `max_retries`
    times, retried after its Retry-After), or None when the client's timeout passed first."""
    for attempt in range(max_retries + 1):
        try:
            response = await client.post("/chat/completions", json=body)
        except httpx.TimeoutException:
            return None
        if response.status_code != 429:
            return response
        report.retries_429 += 1
        if attempt < max_retries:
            await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
    return response


def thread_stacks() -> str:
    """The current stack of every thread of this process, each under its name."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return "\n".join(f"--- thread {names.get(ident, ident)}\n" + "".join(traceback.format_stack(frame))
                     for ident, frame in sys._current_frames().items())
