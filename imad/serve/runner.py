"""Running the blocking pipeline of a request off the event loop, within the server's limits.

A request takes a concurrency slot, waiting in a bounded queue when none is free (429 when the
queue is full or the wait too long, `imad.serve.limits`), its pipeline runs in a worker thread
of a pool sized to the limit (its answer scored in one batch with those of the other requests
waiting for theirs, in one of the scoring processes: `imad.serve.scoring.batcher`), and the request
waits at most `request_timeout_s` (504 after). A request still running when the server's
shutdown timeout passes is answered 503 (uvicorn cancels it; `shutting_down`), not a bare 500.
Python cannot stop a thread, so each pipeline calls its model through a `CancellableChat`: when
the request times out or its client disconnects, the pipeline is cancelled and stops at its next
LLM call boundary, then frees its slot (the call already running finishes first). The slot is
given back only when the work has really ended, so the limit bounds the work actually running.
A pipeline that produced no answer is reported with the upstream failure behind it (502/504);
a question whose prompt cannot fit the model's context is a 413. Every admitted request is
counted in exactly one outcome of the server's metrics (`imad.serve.metrics`).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from imad.errors import InputTooLargeError, LLMError, RequestCancelledError, ServeError
from imad.llm.cancel import CancellableChat
from imad.pipeline import Pipeline, PipelineAnswer
from imad.question import Question
from imad.router import Router
from imad.serve.budgets import BudgetBook
from imad.serve.certificate_watch import CertificateWatch
from imad.serve.factory import WARM_UP_RESPONSE, PipelineFactory
from imad.serve.limits import AdmissionQueue
from imad.serve.logs import log_event
from imad.serve.metrics import CANCELLED, FAILED, TIMED_OUT, ServerMetrics, decision_outcome
from imad.serve.openai.model_names import ModelChoice, listed_model_names
from imad.serve.reload.swap import Generation, RouterIdentity, ServingRouters
from imad.serve.scoring.batcher import ScoreBatcher
from imad.serve.scoring.processes import SCORE_DEADLINE_S, ScoringProcesses
from imad.serve.settings import ServeSettings
from imad.serve.upstream import UpstreamWatch, upstream_failure


class ClientDisconnected(Exception):
    """The client went away before its answer was ready (its pipeline has been cancelled)."""


class PipelineRunner:
    """Answers questions for the server: slot, worker thread, timeout, cancellation, failure mapping."""

    def __init__(self, factory: PipelineFactory, settings: ServeSettings,
                 metrics: ServerMetrics | None = None, *, router_spec: str | None = None) -> None:
        """`router_spec`: the --router the server started with, what a reload loads by default."""
        self.metrics = metrics or ServerMetrics()
        self.budgets = (None if settings.target_trigger_rate is None else BudgetBook(
            settings.target_trigger_rate, settings.budget_window, factory.router))
        if self.budgets is not None:  # the dashboard's target line is there before any request
            self.metrics.set_budget_targets(listed_model_names(), self.budgets.target_rate,
                                            self.budgets.window)
        self.timeout_s = settings.request_timeout_s
        self.limiter = AdmissionQueue(settings.max_concurrency, settings.queue_limit,
                                      settings.queue_timeout_s, settings.retry_after_s)
        self.scoring_processes = settings.scoring_process_count
        """Child processes scoring answers (0: a thread of this process)."""

        def batcher(processes: int) -> Callable[[Router], ScoreBatcher]:
            return lambda router: score_batcher(router, processes, expected=lambda: self.limiter.in_use,
                                                on_batch=self.metrics.observe_score_batch,
                                                deadline_s=min(SCORE_DEADLINE_S, self.timeout_s))

        self.routers = ServingRouters(
            factory, batcher(self.scoring_processes), router_spec, self.budgets,
            on_result=self.metrics.count_reload,
            build_interim=batcher(0) if self.scoring_processes else None)
        self._executor = ThreadPoolExecutor(max_workers=settings.max_concurrency,
                                            thread_name_prefix="imad-serve")
        self.certificates = CertificateWatch(settings.decision_log, settings.on_violation)
        """The live check of each served certificate, cached (`imad.serve.certificate_watch`)."""

    @property
    def factory(self) -> PipelineFactory:
        """The pipeline factory of the router in service (it changes on a reload)."""
        return self.routers.current.factory

    @property
    def scorer(self) -> ScoreBatcher:
        return self.routers.current.scorer

    @property
    def in_flight(self) -> int:
        return self.limiter.in_use

    async def answer(self, question: Question, choice: ModelChoice, *,
                     disconnected: Callable[[], Awaitable[None]] | None = None,
                     request_id: str = "",
                     unanswered: Callable[[PipelineAnswer, RouterIdentity], None] | None = None
                     ) -> tuple[PipelineAnswer, RouterIdentity]:
        """The pipeline's answer and the identity of the router that scored it (the generation
        in service when its pipeline started, `imad.serve.reload.swap`), or ServeError 429 (queue
        full or waited too long), 413 (prompt too large), 504 (too slow), 502 (no answer);
        ClientDisconnected when `disconnected()` returns first. `unanswered(answer, router)`
        hears of a pipeline that ran but gave no usable answer, before its ServeError."""
        try:
            await self.limiter.acquire()
        except asyncio.CancelledError:
            raise shutting_down() from None
        finally:
            self.report_load()
        clock = time.perf_counter()
        outcome = FAILED
        try:
            answer, upstream_errors, router = await self._run(question, choice, disconnected,
                                                              request_id)
            outcome = decision_outcome(answer)
            self.metrics.observe_answer(answer, choice.name)
            if self.budgets is not None:
                self.metrics.observe_budgets(self.budgets.stats())
        except ClientDisconnected:
            outcome = CANCELLED
            raise
        except ServeError as error:
            outcome = TIMED_OUT if error.code == "request_timeout" else outcome
            raise
        except asyncio.CancelledError:  # the server's shutdown timeout passed: answer, cleanly
            outcome = CANCELLED
            raise shutting_down() from None
        finally:
            self.metrics.count_outcome(choice.name, outcome, time.perf_counter() - clock)
        if answer.source == "none":
            if unanswered is not None:
                unanswered(answer, router)
            raise upstream_failure(upstream_errors) or ServeError(
                502, f"the model gave no usable answer: {answer.error}", type="upstream_error",
                code="no_usable_answer")
        return answer, router

    def report_load(self) -> None:
        """Put the slots in use and the queue's length into the metrics' gauges."""
        self.metrics.set_load(self.limiter.in_use, self.limiter.waiting)

    async def _run(self, question: Question, choice: ModelChoice,
                   disconnected: Callable[[], Awaitable[None]] | None,
                   request_id: str) -> tuple[PipelineAnswer, list[LLMError], RouterIdentity]:
        """Run the pipeline of an admitted request (its slot is taken) in a worker thread, on
        the router generation in service now (held until the work ends)."""
        generation = self.routers.acquire()
        watch = UpstreamWatch(generation.factory.model, on_call=self.metrics.observe_upstream_call)
        model = CancellableChat(watch)
        try:
            budget = None if self.budgets is None else self.budgets.budget_for(choice)
            violated = await self.certificates.escalate_all(
                generation.factory.router.config.record.certificate, generation.identity.hash)
            pipeline = generation.factory.build(choice, model, budget=budget, scorer=generation.scorer,
                                                escalate_all=violated)
            # the worker runs in this request's context, so its spans are the request span's children
            future = self._executor.submit(contextvars.copy_context().run, self._work, pipeline,
                                           question, request_id, generation)
        except BaseException:
            self.routers.release(generation)
            self.limiter.release()
            self.report_load()
            raise
        work = asyncio.wrap_future(future)
        work.add_done_callback(_retrieve)
        waiting = {work}
        gone = asyncio.ensure_future(disconnected()) if disconnected is not None else None
        if gone is not None:
            waiting.add(gone)
        try:
            done, _ = await asyncio.wait(waiting, timeout=self.timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            model.cancel("the server is shutting down")
            raise
        finally:
            if gone is not None:
                gone.cancel()
        if work not in done:
            if gone is not None and gone in done:
                model.cancel("the client disconnected")
                raise ClientDisconnected
            model.cancel(f"the request timed out after {self.timeout_s:g} s")
            raise ServeError(504, f"the pipeline did not finish within {self.timeout_s:g} s "
                                  "(--request-timeout)", type="timeout_error", code="request_timeout")
        try:
            answer = work.result()
        except InputTooLargeError as error:
            raise ServeError(413, str(error), code="context_length_exceeded", param="messages") from None
        return answer, watch.errors, generation.identity

    def _work(self, pipeline: Pipeline, question: Question, request_id: str,
              generation: Generation) -> PipelineAnswer:
        cancelled: RequestCancelledError | None = None
        try:
            return pipeline.answer(question)
        except RequestCancelledError as error:
            cancelled = error
            raise
        finally:
            self.routers.release(generation)
            self.limiter.release()
            self.report_load()
            if cancelled is not None:
                log_event("pipeline_cancelled", request_id=request_id, reason=str(cancelled))

    def close(self) -> None:
        """Stop taking work; pipelines already running finish in their threads."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.routers.close()


def score_batcher(router: Router, processes: int, *, expected: Callable[[], int],
                  on_batch: Callable[[int, BaseException | None], None],
                  deadline_s: float = SCORE_DEADLINE_S) -> ScoreBatcher:
    """The batcher every request's pipeline scores with: one lane per scoring process (each
    warmed up on start, killed and replaced when it holds a batch past `deadline_s`), or, with
    `processes` 0, one lane in the batcher's own thread."""
    if processes == 0:
        return ScoreBatcher(router, expected=expected, on_batch=on_batch)
    group = ScoringProcesses(router, processes, warm_up=WARM_UP_RESPONSE, deadline_s=deadline_s)
    return ScoreBatcher(router, expected=expected, lanes=group.scorers, close_scorer=group.close,
                        wait_ready=group.wait_ready, on_batch=on_batch)


def shutting_down() -> ServeError:
    """The answer to a request the server's shutdown cut short (uvicorn cancels what still runs
    once --shutdown-timeout has passed): a 503, logged and counted like any other status."""
    return ServeError(503, "the server is shutting down and could not finish this request within "
                           "its --shutdown-timeout; retry on another server", type="server_error",
                      code="server_shutting_down")


def _retrieve(future: asyncio.Future) -> None:
    """Read the outcome of a pipeline nobody waits for any more, so asyncio logs no warning."""
    if not future.cancelled():
        future.exception()
