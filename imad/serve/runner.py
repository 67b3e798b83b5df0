"""Running the blocking pipeline of a request off the event loop, within the server's limits.

A request takes a concurrency slot (429 when none is free), its pipeline runs in a worker thread
of a pool sized to the limit, and the request waits at most `request_timeout_s` (504 after).
Python cannot stop a thread, so a timed-out pipeline runs on and keeps its slot until it ends:
the limit bounds the work actually running, not just the requests still waiting for it. A
pipeline that produced no answer is reported with the upstream failure behind it (502/504).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from imad.errors import ServeError
from imad.pipeline import Pipeline, PipelineAnswer
from imad.question import Question
from imad.serve.factory import PipelineFactory
from imad.serve.limits import ConcurrencyLimiter
from imad.serve.model_names import ModelChoice
from imad.serve.settings import ServeSettings
from imad.serve.upstream import UpstreamWatch, upstream_failure


class PipelineRunner:
    """Answers questions for the server: slot, worker thread, timeout, failure mapping."""

    def __init__(self, factory: PipelineFactory, settings: ServeSettings) -> None:
        self.factory = factory
        self.timeout_s = settings.request_timeout_s
        self.limiter = ConcurrencyLimiter(settings.max_concurrency, settings.retry_after_s)
        self._executor = ThreadPoolExecutor(max_workers=settings.max_concurrency,
                                            thread_name_prefix="imad-serve")

    @property
    def in_flight(self) -> int:
        return self.limiter.in_use

    async def answer(self, question: Question, choice: ModelChoice) -> PipelineAnswer:
        """The pipeline's answer, or ServeError 429 (full), 504 (too slow), 502 (no answer)."""
        self.limiter.acquire()
        watch = UpstreamWatch(self.factory.model)
        try:
            pipeline = self.factory.build(choice, watch)
            future = self._executor.submit(self._work, pipeline, question)
        except BaseException:
            self.limiter.release()
            raise
        try:
            answer = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), self.timeout_s)
        except asyncio.TimeoutError:
            raise ServeError(504, f"the pipeline did not finish within {self.timeout_s:g} s "
                                  "(--request-timeout)", type="timeout_error",
                             code="request_timeout") from None
        if answer.source == "none":
            raise upstream_failure(watch.errors) or ServeError(
                502, f"the model gave no usable answer: {answer.error}", type="upstream_error",
                code="no_usable_answer")
        return answer

    def _work(self, pipeline: Pipeline, question: Question) -> PipelineAnswer:
        try:
            return pipeline.answer(question)
        finally:
            self.limiter.release()

    def close(self) -> None:
        """Stop taking work; pipelines already running finish in their threads."""
        self._executor.shutdown(wait=False, cancel_futures=True)

