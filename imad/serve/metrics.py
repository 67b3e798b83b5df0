"""Prometheus metrics of the routing server, served at `GET /metrics`.

What an operator of a router must see: requests by model name and status code, decisions by
outcome (`OUTCOMES`: every request that reached the pipeline in exactly one), the
router's score, τ, the realized and the target trigger rate and the window of each budget,
tokens by phase, upstream call latency and errors, queue depth and in-flight pipelines, answers
the OOD detector flagged. Names follow Prometheus conventions (`imad_…_total` counters,
`_seconds` in base units).

Each app owns a private `CollectorRegistry`, so several apps in one process (tests, notebooks)
do not collide. Under `imad serve --workers N` the values live in files that every worker's
`/metrics` sums (`imad.serve.metrics_files`): gauges are the live processes' sum for the queue
and in-flight, one series per process for the per-process budgets' τ and realized rate, the
largest for the budgets' target and window, which every worker sets to the same flags, so two
workers report the target once instead of twice it.

Model names are client-chosen (any τ suffix is valid), so the `model` label keeps at most
`MAX_MODEL_LABELS` distinct names and reports the rest as "other".
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from imad.decide.schema import FIELD, KEPT
from imad.event_counts import EventCounts
from imad.pipeline import PipelineAnswer
from imad.serve.metrics_files import MULTIPROCESS_ENV, forget_dead_processes, multiprocess_mode

MAX_MODEL_LABELS = 32
OTHER_MODEL = "other"
INVALID_MODEL = "invalid"
SCORE_BUCKETS = tuple(round(0.05 * step, 2) for step in range(1, 21))
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)
PHASES = {"self_critique": "self_critique", "debate": "debate"}
"""The trace stage of each LLM call → the `phase` label of the token counter."""
DECISION_LOG_ROWS, SHADOW_DEBATES = "imad_decision_log_rows", "imad_shadow_debates"
SHADOW_DEBATE_PHASE = "shadow_debate"
"""The `phase` of the tokens a shadow debate spends after its response (`imad.serve.shadow_debates`)."""

# The one outcome each admitted request ends in: a decision's own (`RouterDecision.outcome`, the
# schema's `metrics` view, labelled `kept` or `escalated_<outcome>`), a fallback to the
# self-critique answer, or an end without an answer (none usable, timeout, cancelled, error).

DECISION_OUTCOMES = {outcome: outcome if outcome == KEPT else f"escalated_{outcome}"
                     for outcome in FIELD["outcome"].values}
"""The metrics label of each `RouterDecision.outcome` the schema declares."""
FALLBACK = "fallback"
NO_ANSWER = "no_answer"
TIMED_OUT = "timed_out"
CANCELLED = "cancelled"
FAILED = "failed"

OUTCOMES = (*DECISION_OUTCOMES.values(), FALLBACK, NO_ANSWER, TIMED_OUT, CANCELLED, FAILED)
"""Every value of the `outcome` label, so each is exported (as 0) before it first happens."""


def decision_outcome(answer: PipelineAnswer) -> str:
    """The outcome of a pipeline that returned `answer` (the comment above `DECISION_OUTCOMES`)."""
    if not answer.answered:
        return NO_ANSWER
    if answer.source == "single_agent_fallback":
        return FALLBACK
    return DECISION_OUTCOMES[answer.decision.outcome]


class ModelLabels:
    """The `model` label of a request: its name while fewer than `limit` names were seen."""

    def __init__(self, limit: int = MAX_MODEL_LABELS) -> None:
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def label(self, name: str | None) -> str:
        if name is None:
            return INVALID_MODEL
        with self._lock:
            if name in self._seen:
                return name
            if len(self._seen) < self.limit:
                self._seen.add(name)
                return name
        return OTHER_MODEL


class ServerMetrics:
    """The server's metrics and the calls that update them (thread-safe, like prometheus_client)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.models = ModelLabels()
        registry = self.registry
        self.requests = Counter("imad_requests", "Chat completion requests answered, by model name "
                                "and HTTP status", ["model", "code"], registry=registry)
        self.decisions = Counter("imad_decisions", "Requests that reached the pipeline, by the one "
                                 "outcome each ended in", ["model", "outcome"], registry=registry)
        self.ood_flagged = Counter("imad_ood_flagged", "Scored answers the out-of-distribution "
                                   "detector flagged, whatever the OOD policy did with them",
                                   ["model"], registry=registry)
        self.score = Histogram("imad_router_score", "The router's p (probability the self-critique "
                               "answer is correct) of scored answers", buckets=SCORE_BUCKETS,
                               registry=registry)
        self.tau = Gauge("imad_budget_tau", "τ the trigger budget of a model name uses now",
                         ["model"], registry=registry, multiprocess_mode="all")
        self.trigger_rate = Gauge("imad_budget_realized_trigger_rate", "Share of escalated answers "
                                  "in the budget's window", ["model"], registry=registry,
                                  multiprocess_mode="all")
        self.target_rate = Gauge("imad_budget_target_trigger_rate", "Share of answers the trigger "
                                 "budget of a model name aims to escalate (--target-trigger-rate)",
                                 ["model"], registry=registry, multiprocess_mode="max")
        self.budget_window = Gauge("imad_budget_window_answers", "Answers in the trigger budget's "
                                   "window, over which τ and the realized rate are taken "
                                   "(--budget-window)", ["model"], registry=registry,
                                   multiprocess_mode="max")
        self.tokens = Counter("imad_tokens", "LLM tokens spent, by phase and kind",
                              ["phase", "kind"], registry=registry)
        self.upstream_latency = Histogram("imad_upstream_request_duration_seconds", "Duration of "
                                          "each call to the upstream model server",
                                          buckets=LATENCY_BUCKETS, registry=registry)
        self.upstream_errors = Counter("imad_upstream_errors", "Failed upstream calls, by error type",
                                       ["type"], registry=registry)
        self.request_latency = Histogram("imad_request_duration_seconds", "Time from request to "
                                         "answer of the requests that reached the pipeline",
                                         buckets=LATENCY_BUCKETS, registry=registry)
        self.score_batch_size = Histogram("imad_score_batch_size", "Answers scored together in "
                                          "one batch (one nlp.pipe and one router forward)",
                                          buckets=BATCH_BUCKETS, registry=registry)
        self.scoring_failures = Counter("imad_score_batch_failures", "Score batches that failed "
                                        "(one bad answer, or a scoring process that died) and were "
                                        "scored again one answer at a time, by error type",
                                        ["type"], registry=registry)
        self.decision_log = Counter(DECISION_LOG_ROWS, "Decision-log rows by what became "
                                    "of them: recorded, written, duplicates, pruned (past "
                                    "--decision-log-max-rows), amended, dropped_<reason>",
                                    ["event"], registry=registry)
        self.shadow_decisions = Counter("imad_shadow_decisions", "Decisions made in shadow mode "
                                        "(the single answer served), by what the policy would "
                                        "have done", ["would_escalate"], registry=registry)
        self.shadow_debates = Counter(SHADOW_DEBATES, "Shadow debates (run after the "
                                      "response) by what became of them: submitted, run, "
                                      "dropped (queue full), failed, changed (the answer), "
                                      "abandoned (left undone by a shutdown)",
                                      ["event"], registry=registry)
        self.queue_depth = Gauge("imad_queue_depth", "Requests waiting for a pipeline slot",
                                 registry=registry, multiprocess_mode="livesum")
        self.in_flight = Gauge("imad_in_flight", "Pipelines running", registry=registry,
                               multiprocess_mode="livesum")
        self.reloads = Counter("imad_router_reloads", "Router reloads (POST /v1/imad/admin/reload, "
                               "SIGHUP), by result: ok, or refused (the old router kept serving); "
                               "under --workers each worker counts its own", ["result"],
                               registry=registry)
        self.certified_alpha = Gauge("imad_certificate_alpha", "The error among kept answers the "
                                     "serving router's certificate promises (0: τ not certified)",
                                     registry=registry, multiprocess_mode="max")
        self.certificate_violated = Gauge("imad_certificate_violated", "1 when the live check of "
                                          "the certificate rejects its promise on the decision "
                                          "log's labels of kept answers", registry=registry,
                                          multiprocess_mode="max")
        for result in ("ok", "refused"):
            self.reloads.labels(result=result)
        for outcome in OUTCOMES:
            self.decisions.labels(model=OTHER_MODEL, outcome=outcome)
        self.ood_flagged.labels(model=OTHER_MODEL)
        for phase in (*PHASES.values(), SHADOW_DEBATE_PHASE):
            for kind in ("prompt", "completion"):
                self.tokens.labels(phase=phase, kind=kind)

    def count_shadow_debate(self, event: str, count: int) -> None:
        """A change of the shadow runner's counters (`ShadowRunner(on_count=…)`)."""
        self.shadow_debates.labels(event=event).inc(count)

    def count_shadow_tokens(self, prompt_tokens: int, completion_tokens: int) -> None:
        """The tokens one shadow debate spent (`shadow_debate_job(on_tokens=…)`)."""
        self.tokens.labels(phase=SHADOW_DEBATE_PHASE, kind="prompt").inc(prompt_tokens)
        self.tokens.labels(phase=SHADOW_DEBATE_PHASE, kind="completion").inc(completion_tokens)

    def count_decision_log(self, event: str, count: int) -> None:
        """A change of the decision log's counters (`DecisionLog(on_count=…)`)."""
        self.decision_log.labels(event=event).inc(count)

    def model_label(self, name: str | None) -> str:
        return self.models.label(name)

    def count_request(self, model: str | None, status: int) -> None:
        self.requests.labels(model=self.model_label(model), code=str(status)).inc()

    def count_outcome(self, model: str, outcome: str, latency_s: float) -> None:
        self.decisions.labels(model=self.model_label(model), outcome=outcome).inc()
        self.request_latency.observe(latency_s)

    def count_reload(self, result: str) -> None:
        self.reloads.labels(result=result).inc()

    def observe_answer(self, answer: PipelineAnswer, model: str | None = None) -> None:
        """The score, OOD flag and tokens of one answer (`model`: the name it was asked for)."""
        if answer.decision.p is not None:
            self.score.observe(answer.decision.p)
        if answer.decision.ood:
            self.ood_flagged.labels(model=self.model_label(model)).inc()
        if answer.decision.would_escalate is not None:
            self.shadow_decisions.labels(
                would_escalate=str(answer.decision.would_escalate).lower()).inc()
        for call in answer.trace:
            phase = PHASES.get(call.get("stage", ""), "debate")
            self.tokens.labels(phase=phase, kind="prompt").inc(call["prompt_tokens"])
            self.tokens.labels(phase=phase, kind="completion").inc(call["completion_tokens"])

    def set_budget_targets(self, names: Iterable[str], target_rate: float, window: int) -> None:
        """The target and window a trigger budget of each model name in `names` holds (at start:
        the names /v1/models lists; a name seen later gets its own with `observe_budgets`)."""
        for name in names:
            label = self.model_label(name)
            self.target_rate.labels(model=label).set(target_rate)
            self.budget_window.labels(model=label).set(window)

    def observe_budgets(self, budgets: dict[str, dict[str, Any]]) -> None:
        """τ, the realized rate, the target and the window of each budget (`BudgetBook.stats()`)."""
        for name, stats in budgets.items():
            label = self.model_label(name)
            if stats.get("target_rate") is not None:
                self.target_rate.labels(model=label).set(stats["target_rate"])
                self.budget_window.labels(model=label).set(stats["window"])
            if stats.get("threshold") is not None:
                self.tau.labels(model=label).set(stats["threshold"])
            if stats.get("realized_rate") is not None:
                self.trigger_rate.labels(model=label).set(stats["realized_rate"])

    def observe_upstream_call(self, duration_s: float, error: BaseException | None) -> None:
        self.upstream_latency.observe(duration_s)
        if error is not None:
            self.upstream_errors.labels(type=type(error).__name__).inc()

    def observe_score_batch(self, size: int, error: BaseException | None) -> None:
        """One batch of the score batcher: its size, and its error when it failed."""
        self.score_batch_size.observe(size)
        if error is not None:
            self.scoring_failures.labels(type=type(error).__name__).inc()

    def observe_certificate(self, state: dict[str, Any] | None) -> None:
        """The serving router's certificate and its live check (`imad.decide.certify.watch`)."""
        live = None if state is None else state["live_check"]
        self.certified_alpha.set(0.0 if state is None else state["alpha"])
        self.certificate_violated.set(1.0 if live is not None and live["violated"] else 0.0)

    def set_load(self, in_flight: int, waiting: int) -> None:
        self.in_flight.set(in_flight)
        self.queue_depth.set(waiting)

    def all_workers_counts(self, counts: EventCounts, family: str) -> EventCounts:
        """`counts` (this worker's decision-log or shadow-debate counters, counted into `family`)
        summed over every worker as `/metrics` sums them under --workers; `counts` itself in
        one process, whose counters they are."""
        if not multiprocess_mode():
            return counts
        fleet = EventCounts(counts.names)
        for labels, value in sample_values(self.render()[0].decode(), f"{family}_total"):
            if labels.get("event") in fleet.names and value >= 1:
                fleet.add(labels["event"], int(value))
        return fleet

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type: this process's, or every worker's."""
        if multiprocess_mode():
            from prometheus_client import multiprocess

            forget_dead_processes(os.environ[MULTIPROCESS_ENV])
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def sample_values(text: str, name: str) -> Iterable[tuple[dict[str, str], float]]:
    """The (labels, value) samples of metric family `name` in exposition `text` (for tests)."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                yield sample.labels, sample.value
