"""Benchmark: what OpenTelemetry tracing costs `Pipeline.answer` (imad.tracing, extra `otel`).

    python benchmarks/bench_tracing.py [--repeats 200]

The scripted echo model (tests/support/serving.py) answers instantly, so the pipeline's own CPU
is all that is timed: a kept answer (τ 0: critique, features, decision) and an escalated one
(τ 1: plus a 3-agent, 2-round AceMAD debate, 6 debate calls). Each is timed with tracing off
(no provider: the no-op path) and on (an SDK TracerProvider with a SimpleSpanProcessor into an
InMemorySpanExporter, cleared between passes), interleaved so drift hits both alike. Prints the
median and p90 per answer in ms and the spans per answer. Then one empty `tracing.span` (enter and
exit, 20,000 times) off and on: the cost per span, which the per-answer medians, dominated by
spaCy and the router's 42-row explain pass, cannot resolve on a busy machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from imad import tracing
from imad.llm.scripted import ScriptedChat
from imad.pipeline import Pipeline
from tests.router.router_helpers import make_router
from tests.support.serving import tagged_question
from tests.test_tracing import disagreeing


def set_provider(provider: TracerProvider | None) -> None:
    """Set (or, with None, remove) the global tracer provider, as the tests do."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    if provider is not None:
        trace.set_tracer_provider(provider)


def timed(function: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append((time.perf_counter() - started) * 1000)
    return times


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"median {statistics.median(ordered):7.3f} ms  p90 {p90:7.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    router = make_router()
    for label, tau in (("kept (τ 0)", 0.0), ("escalated (τ 1)", 1.0)):
        pipeline = Pipeline(router, ScriptedChat(disagreeing), "acemad", tau=tau,
                            backend_options={"n_agents": 3, "n_rounds": 2})
        question = tagged_question(1)
        pipeline.answer(question)  # warm: spaCy loaded
        results: dict[str, list[float]] = {"off": [], "on": []}
        spans_per_answer = 0
        for _ in range(5):
            for state in ("off", "on"):
                set_provider(provider if state == "on" else None)
                exporter.clear()
                results[state] += timed(lambda p=pipeline, q=question: p.answer(q), args.repeats // 5)
                if state == "on":
                    spans_per_answer = len(exporter.get_finished_spans()) // (args.repeats // 5)
        set_provider(None)
        off, on = statistics.median(results["off"]), statistics.median(results["on"])
        print(f"{label:16s} tracing off: {summary(results['off'])}")
        print(f"{label:16s} tracing on:  {summary(results['on'])}  ({spans_per_answer} spans/answer, "
              f"+{on - off:.3f} ms = +{100 * (on - off) / off:.1f}% of the median)")

    for state in ("off", "on"):
        set_provider(provider if state == "on" else None)
        exporter.clear()

        def empty_spans() -> None:
            for _ in range(20_000):
                with tracing.span("bench", {"imad.router.p": 0.5}):
                    pass

        per_span_us = 1000 * min(timed(empty_spans, 3)) / 20_000
        print(f"one span, tracing {state}: {per_span_us:.2f} µs (best of 3 × 20,000)")
    set_provider(None)


if __name__ == "__main__":
    main()
