"""The server's shadow debates: `imad serve --shadow --shadow-debate-rate R`.

In shadow mode every request is answered with its single answer. For a seeded share R of
completion ids (`imad.shadow.ShadowSampler`: chosen without looking at the decision, so
would-escalate and would-keep answers are sampled alike) the chat route hands the answer here
once its response is sent (a Starlette background task). `offer` only queues: the debate runs on
the `ShadowRunner`'s own thread, on a pipeline of the same model name built there, and its answer
and tokens are amended into the decision's log row. Its upstream calls are watched like a live
request's (`imad_upstream_request_duration_seconds`, `imad_upstream_errors_total`) and its
tokens counted under `imad_tokens{phase="shadow_debate"}`, so an operator sees what shadow mode
costs. A full queue drops the debate and counts it; the counters go to `/metrics`
(`imad_shadow_debates_total`) and `/v1/imad/stats`. Shutting down abandons the queued debates,
gives the running one `--shutdown-timeout` to finish and then cancels it at its next upstream
call, so a long queue never holds the server's exit: the abandoned ones are counted
(`abandoned`) and logged in one `shadow_debates_abandoned` line.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from imad.decision_log.writer import DecisionLog
from imad.llm.cancel import CancellableChat
from imad.pipeline import PipelineAnswer
from imad.serve.factory import PipelineFactory
from imad.serve.logs import log_event
from imad.serve.metrics import SHADOW_DEBATES, ServerMetrics
from imad.serve.openai.model_names import ModelChoice
from imad.serve.settings import ServeSettings
from imad.serve.upstream import UpstreamWatch
from imad.shadow import ShadowRunner, ShadowSampler, shadow_debate_job

SHADOW_QUEUE = 64
"""Shadow debates waiting at most; past it they are dropped and counted."""
SHADOW_UPSTREAM_SLOTS = 8
"""Upstream calls added to the client's limit for the shadow debates (one debate at a time; a
round sends its agents' calls at once): without them a debate's round would take the slots of
live requests' calls and sit on their latency. A back-end with more agents than this shares the
rest."""


def shadow_upstream_slots(settings: ServeSettings) -> int:
    """The upstream slots to add for `settings`' shadow debates (0 without them)."""
    return SHADOW_UPSTREAM_SLOTS if settings.shadow and settings.shadow_debate_rate > 0.0 else 0


class ShadowDebates:
    """Samples served answers and debates them in the background (module docstring)."""

    def __init__(self, settings: ServeSettings, current_factory: Callable[[], PipelineFactory],
                 metrics: ServerMetrics, log: DecisionLog | None) -> None:
        self.sampler = ShadowSampler(settings.shadow_debate_rate, settings.shadow_seed)
        self.runner = ShadowRunner(SHADOW_QUEUE, on_count=metrics.count_shadow_debate)
        self.current_factory = current_factory
        """The factory of the router in service (a hot reload replaces it)."""
        self.metrics = metrics
        self.log = log
        self._running: set[CancellableChat] = set()
        """The models of the debates running now (`close` cancels them)."""
        self._lock = threading.Lock()

    def offer(self, answer: PipelineAnswer, choice: ModelChoice, completion_id: str) -> bool:
        """Queue the shadow debate of a served answer when its id is sampled (and it has a
        parsed self-critique to seed the debate); True when queued."""
        if not self.sampler.chosen(completion_id) or not answer.critique.ok:
            return False
        factory, log, metrics = self.current_factory(), self.log, self.metrics

        def job() -> bool | None:
            model = CancellableChat(UpstreamWatch(factory.model, on_call=metrics.observe_upstream_call),
                                    reason="the server is shutting down")
            with self._lock:
                self._running.add(model)
            try:
                return shadow_debate_job(factory.build(choice, model), answer, completion_id, log,
                                         on_tokens=metrics.count_shadow_tokens)()
            finally:
                with self._lock:
                    self._running.discard(model)

        return self.runner.submit(job)

    def stats(self) -> dict[str, Any]:
        """The rate, the seed and the runner's counters, summed over every worker under
        --workers (for /v1/imad/stats)."""
        counts = self.metrics.all_workers_counts(self.runner.stats, SHADOW_DEBATES)
        return {"rate": self.sampler.rate, "seed": self.sampler.seed, **counts.snapshot()}

    def close(self, timeout_s: float) -> int:
        """Stop within `timeout_s` (the server's --shutdown-timeout): the queued debates are
        abandoned, the running one cancelled if it has not finished by then; the number
        abandoned, logged when there are any."""
        abandoned = self.runner.abandon(timeout_s, cancel=self._cancel_running)
        if abandoned:
            log_event("shadow_debates_abandoned", level=logging.WARNING, abandoned=abandoned,
                      shutdown_timeout_s=timeout_s)
        return abandoned

    def _cancel_running(self) -> None:
        with self._lock:
            running = list(self._running)
        for model in running:
            model.cancel()


def shadow_debates(settings: ServeSettings, current_factory: Callable[[], PipelineFactory],
                   metrics: ServerMetrics, log: DecisionLog | None) -> ShadowDebates | None:
    """The server's shadow debates, None unless `--shadow` with a rate above 0."""
    if not settings.shadow or settings.shadow_debate_rate <= 0.0:
        return None
    return ShadowDebates(settings, current_factory, metrics, log)
