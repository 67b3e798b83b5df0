"""Benchmark: the embedded model's speed on self-critique calls, in-process and over HTTP.

    .venv/bin/python benchmarks/bench_llm.py [--questions 20] [--threads 2] [--skip-server]

Prints prompt tokens/s, generated tokens/s, and median / p95 latency of one self-critique call
on the first N PubMedQA questions (with their abstracts), first through the in-process
llama-cpp-python model, then through `python -m llama_cpp.server` on loopback serving the same
GGUF. Calls are not cached: every number is a fresh generation. Prompt speed comes from a second
pass with generation capped at one token; generation speed is the rest of the time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from imad.critique.call import SelfCritique  # noqa: E402
from imad.errors import TruncatedResponseError  # noqa: E402
from imad.llm.local_gguf import LocalGGUFChat, default_model_path  # noqa: E402
from imad.llm.openai_http import OpenAICompatibleChat  # noqa: E402
from imad.llm.types import ChatModel, ChatRequest  # noqa: E402
from training.data import load_questions  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def measure(model: ChatModel, questions: list, label: str) -> None:
    critique = SelfCritique(model)
    latencies, prompt_tokens, completion_tokens, statuses = [], 0, 0, {}
    for question in questions:
        started = time.perf_counter()
        result = critique.run(question)
        latencies.append(time.perf_counter() - started)
        prompt_tokens += result.prompt_tokens
        completion_tokens += result.completion_tokens
        statuses[result.status] = statuses.get(result.status, 0) + 1
    # A second pass with generation capped at one token times prompt processing alone. It runs
    # after the first so llama.cpp's prefix cache holds the previous question, as in pass one.
    prefill_seconds = 0.0
    for question in questions:
        request = critique.request(question)
        started = time.perf_counter()
        with contextlib.suppress(TruncatedResponseError):  # one token is always "truncated"
            model.chat(ChatRequest(messages=request.messages, max_tokens=1, seed=request.seed))
        prefill_seconds += time.perf_counter() - started
    total = sum(latencies)
    decode_seconds = max(total - prefill_seconds, 1e-9)
    print(f"\n## {label} ({len(questions)} PubMedQA questions, load average {os.getloadavg()[0]:.2f})")
    print(f"statuses: {statuses}")
    print(f"prompt tokens/s (1-token passes): {prompt_tokens / prefill_seconds:8.1f}")
    print(f"generated tokens/s (net of prompt): {completion_tokens / decode_seconds:8.1f}")
    print(f"end-to-end tokens/s: {(prompt_tokens + completion_tokens) / total:8.1f}")
    print(f"mean prompt / completion tokens: {prompt_tokens / len(questions):.0f} / "
          f"{completion_tokens / len(questions):.0f}")
    print(f"latency median {statistics.median(latencies):.2f} s, p95 {percentile(latencies, 0.95):.2f} s, "
          f"max {max(latencies):.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--skip-server", action="store_true")
    args = parser.parse_args()
    questions = load_questions("pubmedqa", data_dir=args.data_dir, limit=args.questions)
    measure(LocalGGUFChat(n_threads=args.threads), questions, "embedded llama-cpp-python")
    if not args.skip_server:
        from tests.support.servers import llama_server

        with llama_server(default_model_path(), threads=args.threads) as url:
            chat = OpenAICompatibleChat(model="smollm2", base_url=url, timeout=120,
                                        structured_output="json_object_schema")
            measure(chat, questions, f"loopback llama_cpp.server at {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
