"""The server's shadow debates (issue 32 item 1): `imad serve --shadow --shadow-debate-rate R`.

In shadow mode every request is answered with its single answer. For a seeded share R of
completion ids (`imad.shadow.ShadowSampler`: chosen without looking at the decision, so
would-escalate and would-keep answers are sampled alike) the chat route hands the answer here
once its response is sent (a Starlette background task). `offer` only queues: the debate runs on
the `ShadowRunner`'s own thread, on a pipeline of the same model name built there, and its answer
and tokens are amended into the decision's log row. Its upstream calls are watched like a live
request's (`imad_upstream_request_duration_seconds`, `imad_upstream_errors_total`) and its
tokens counted under `imad_tokens{phase="shadow_debate"}`, so an operator sees what shadow mode
costs. A full queue drops the debate and counts it; the counters go to `/metrics`
(`imad_shadow_debates_total`) and `/v1/imad/stats`. Shutting down finishes the queued debates
before the decision log closes (the queue is bounded).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from imad.decision_log.writer import DecisionLog
from imad.pipeline import PipelineAnswer
from imad.serve.factory import PipelineFactory
from imad.serve.metrics import ServerMetrics
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

    def offer(self, answer: PipelineAnswer, choice: ModelChoice, completion_id: str) -> bool:
        """Queue the shadow debate of a served answer when its id is sampled (and it has a
        parsed self-critique to seed the debate); True when queued."""
        if not self.sampler.chosen(completion_id) or not answer.critique.ok:
            return False
        factory, log, metrics = self.current_factory(), self.log, self.metrics

        def job() -> bool | None:
            model = UpstreamWatch(factory.model, on_call=metrics.observe_upstream_call)
            return shadow_debate_job(factory.build(choice, model), answer, completion_id, log,
                                     on_tokens=metrics.count_shadow_tokens)()

        return self.runner.submit(job)

    def stats(self) -> dict[str, Any]:
        """The rate, the seed and the runner's counters (for /v1/imad/stats)."""
        return {"rate": self.sampler.rate, "seed": self.sampler.seed, **self.runner.stats.snapshot()}

    def close(self) -> None:
        """Finish the queued debates (their rows amended), then stop."""
        self.runner.close(wait=True)


def shadow_debates(settings: ServeSettings, current_factory: Callable[[], PipelineFactory],
                   metrics: ServerMetrics, log: DecisionLog | None) -> ShadowDebates | None:
    """The server's shadow debates, None unless `--shadow` with a rate above 0."""
    if not settings.shadow or settings.shadow_debate_rate <= 0.0:
        return None
    return ShadowDebates(settings, current_factory, metrics, log)
