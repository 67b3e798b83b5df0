"""Benchmark of the 41-feature extractor (SPEC §4, issue 17): schema v1 and v2 side by side.

    python benchmarks/bench_features.py [--data PATH] [--n 500] [--batch-size 64]

Issue 17's goal, measured in one run on the same responses: batched v2 ≥ 2.0× v1's throughput
on one process, and v2's median single-response latency ≥ 2× faster (the paper's bound is
50 ms per response). Exit status 0 when both are met.

The 500 responses are built from real text: PubMedQA PQA-L (`../shared/datasets/pubmedqa/
pqal.jsonl`, MIT, see its SOURCE.md). For each item the question is the PubMedQA question; the
initial reasoning is the abstract's opening sentences and the critique the authors' conclusion
(`long_answer`), each cut at a sentence boundary to at most 600 characters — the length the
self-critique JSON schema allows per field, so these are responses of typical length. Answers
and confidences are drawn with a fixed seed (they do not affect the timing).

The machine may be shared, so the two schemas are timed alternately — single calls v1, v2,
v1, v2 … and batches in the order v1 v2 v2 v1 (best of two each) — and CPU seconds of this
process are reported beside wall-clock seconds: the CPU ratio is what contention disturbs
least. A breakdown per stage (each spaCy component, textstat, lexicons, our own code) shows
where each schema's time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from features import extractor_for  # noqa: E402
from features.extractor import ParsedText, load_lexicons  # noqa: E402
from features.lexical import lexical_features, negation_count  # noqa: E402
from features.pipeline import clip_text, load_pipeline  # noqa: E402
from features.question import question_features  # noqa: E402
from features.readability import load_textstat, readability_features  # noqa: E402
from features.surface import surface_features  # noqa: E402
from features.syntax import syntax_features  # noqa: E402
from imad.critique.schema import CritiqueResponse  # noqa: E402

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "datasets" / "pubmedqa" / "pqal.jsonl"
FIELD_CHARS = 600  # imad.critique.schema.response_schema's default maxLength per text field
LABELS = ("yes", "no", "maybe")
SCHEMAS = (1, 2)
GOAL_RATIO = 2.0


def first_sentences(text: str, max_chars: int = FIELD_CHARS) -> str:
    """The longest run of leading sentences of `text` within `max_chars` (at least one)."""
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    kept = sentences[0][:max_chars]
    for sentence in sentences[1:]:
        if len(kept) + 1 + len(sentence) > max_chars:
            break
        kept += " " + sentence
    return kept


def build_responses(path: Path, n: int, seed: int = 0) -> tuple[list[str], list[CritiqueResponse]]:
    """`n` (question, self-critique) pairs made from PubMedQA items (see module docstring)."""
    rng = random.Random(seed)
    questions: list[str] = []
    responses: list[CritiqueResponse] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            item = json.loads(line)
            initial = item["final_decision"]
            alternative = rng.choice([label for label in LABELS if label != initial])
            final = alternative if rng.random() < 0.2 else initial
            questions.append(item["question"])
            responses.append(CritiqueResponse(
                initial_answer=initial,
                initial_reasoning=first_sentences(" ".join(item["contexts"])),
                critique=first_sentences(item["long_answer"]),
                alternative_answer=alternative,
                final_answer=final,
                confidence_initial=round(rng.uniform(0.3, 1.0), 2),
                confidence_critique=round(rng.uniform(0.1, 0.9), 2),
            ))
            if len(questions) == n:
                break
    if len(questions) < n:
        raise SystemExit(f"{path} has only {len(questions)} items, {n} requested")
    return questions, responses


def clear_textstat_caches() -> None:
    """Empty textstat's per-text LRU caches so readability is timed as for unseen text."""
    for name, module in list(sys.modules.items()):
        if name.startswith("textstat."):
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def time_single(questions, responses) -> dict[int, dict]:
    """Each schema's `extract` per response, alternating which schema goes first."""
    results = {v: {"latencies": [], "cpu": 0.0, "rows": []} for v in SCHEMAS}
    for index, (question, response) in enumerate(zip(questions, responses, strict=True)):
        for version in (SCHEMAS if index % 2 == 0 else SCHEMAS[::-1]):
            extractor = extractor_for(version)
            cpu_start, start = time.process_time(), time.perf_counter()
            row = extractor.extract(question, response)
            results[version]["latencies"].append(time.perf_counter() - start)
            results[version]["cpu"] += time.process_time() - cpu_start
            results[version]["rows"].append(row)
    return results


def time_batches(questions, responses, batch_size: int) -> dict[int, dict]:
    """Each schema's `extract_batch` (one process) twice, in the order v1 v2 v2 v1; best of two."""
    results = {v: {"wall": float("inf"), "cpu": float("inf"), "matrix": None} for v in SCHEMAS}
    for version in (*SCHEMAS, *SCHEMAS[::-1]):
        cpu_start, start = time.process_time(), time.perf_counter()
        matrix = extractor_for(version).extract_batch(questions, responses, batch_size=batch_size)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        best = results[version]
        best["wall"], best["cpu"], best["matrix"] = min(best["wall"], wall), min(best["cpu"], cpu), matrix
    return results


def breakdown(questions, responses, batch_size: int, version: int) -> dict[str, float]:
    """CPU seconds per stage of schema `version` over all texts, each stage timed on its own."""
    nlp = load_pipeline(version)
    extractor = extractor_for(version)
    lexicons = load_lexicons()
    texts = [clip_text(text) for question, response in zip(questions, responses, strict=True)
             for text in (question, response.initial_reasoning, response.critique)]
    seconds: dict[str, float] = {}
    start = time.process_time()
    docs = [nlp.make_doc(text) for text in texts]
    seconds["spaCy tokenizer"] = time.process_time() - start
    for name, component in nlp.pipeline:
        start = time.process_time()
        docs = list(component.pipe(docs, batch_size=3 * batch_size))
        seconds[f"spaCy {name}"] = time.process_time() - start
    start = time.process_time()
    parsed = [ParsedText.from_doc(doc, extractor.count_entities) for doc in docs]
    seconds["lexicon tokens + entity count"] = time.process_time() - start
    groups = [parsed[i:i + 3] for i in range(0, len(parsed), 3)]

    clear_textstat_caches()
    start = time.process_time()
    for _, reasoning, critique in groups:
        readability_features(reasoning.text)
        readability_features(critique.text)
    seconds["textstat readability"] = time.process_time() - start

    start = time.process_time()
    for _, reasoning, critique in groups:
        lexical_features(reasoning.lexicon_tokens, lexicons)
        lexical_features(critique.lexicon_tokens, lexicons)
        negation_count(critique.lexicon_tokens, lexicons)
    seconds["lexicon matching"] = time.process_time() - start

    start = time.process_time()
    for question, reasoning, critique in groups:
        question_features(question.text, question.doc, question.entities)
        for text in (reasoning, critique):
            surface_features(text.doc)
            syntax_features(text.doc, text.entities)
    seconds["question/surface/syntax code"] = time.process_time() - start
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA pqal.jsonl")
    parser.add_argument("--n", type=int, default=500, help="responses (default: 500)")
    parser.add_argument("--batch-size", type=int, default=64, help="responses per nlp.pipe batch")
    args = parser.parse_args(argv)

    questions, responses = build_responses(args.data, args.n)
    chars = [len(r.initial_reasoning) + len(r.critique) for r in responses]
    print(f"{args.n} PubMedQA-derived self-critique responses: reasoning + critique "
          f"{statistics.mean(chars):.0f} chars on average (question "
          f"{statistics.mean(map(len, questions)):.0f}); machine: {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} before the run")

    for version in SCHEMAS:
        start = time.perf_counter()
        nlp = load_pipeline(version)
        print(f"schema v{version}: pipeline {'+'.join(nlp.pipe_names)} loaded in "
              f"{time.perf_counter() - start:.2f} s")
    load_textstat(), load_lexicons()
    for version in SCHEMAS:
        extractor_for(version).extract(questions[0], responses[0])  # warm-up

    single = time_single(questions, responses)
    batched = time_batches(questions, responses, args.batch_size)
    summary: dict[int, dict[str, float]] = {}
    for version in SCHEMAS:
        latencies = single[version]["latencies"]
        rows = np.stack(single[version]["rows"])
        summary[version] = {
            "single_rate": args.n / sum(latencies),
            "median_ms": 1000 * statistics.median(latencies),
            "p90_ms": 1000 * statistics.quantiles(latencies, n=10)[-1],
            "single_cpu_ms": 1000 * single[version]["cpu"] / args.n,
            "batch_rate": args.n / batched[version]["wall"],
            "batch_cpu_ms": 1000 * batched[version]["cpu"] / args.n,
        }
        s = summary[version]
        same = np.array_equal(batched[version]["matrix"], rows)
        print(f"v{version} single extract():        {s['single_rate']:6.1f} responses/s   median "
              f"{s['median_ms']:.1f} ms, p90 {s['p90_ms']:.1f} ms; CPU {s['single_cpu_ms']:.1f} "
              f"ms/response")
        print(f"v{version} batched (1 process):     {s['batch_rate']:6.1f} responses/s   "
              f"({batched[version]['wall']:.2f} s, batch_size={args.batch_size}); CPU "
              f"{s['batch_cpu_ms']:.1f} ms/response; rows identical to single: {same}")

    old, new = summary[1], summary[2]
    batch_ratio = new["batch_rate"] / old["batch_rate"]
    median_ratio = old["median_ms"] / new["median_ms"]
    print(f"v2 / v1: batched throughput {batch_ratio:.2f}x (CPU "
          f"{old['batch_cpu_ms'] / new['batch_cpu_ms']:.2f}x); single median latency "
          f"{median_ratio:.2f}x faster (CPU {old['single_cpu_ms'] / new['single_cpu_ms']:.2f}x); "
          f"single throughput {new['single_rate'] / old['single_rate']:.2f}x")

    for version in SCHEMAS:
        seconds = breakdown(questions, responses, args.batch_size, version)
        total = sum(seconds.values())
        print(f"where v{version}'s time goes (CPU, stages timed separately, "
              f"{1000 * total / args.n:.1f} ms per response):")
        for stage, value in seconds.items():
            print(f"  {stage:<32} {100 * value / total:5.1f} %  "
                  f"{1000 * value / args.n:6.2f} ms/response")

    ok = batch_ratio >= GOAL_RATIO and median_ratio >= GOAL_RATIO
    print(f"goals: batched v2 ≥ {GOAL_RATIO}x v1: {batch_ratio:.2f}x "
          f"{'met' if batch_ratio >= GOAL_RATIO else 'MISSED'}; single median ≥ {GOAL_RATIO}x "
          f"faster: {median_ratio:.2f}x {'met' if median_ratio >= GOAL_RATIO else 'MISSED'}; "
          f"v2 median {new['median_ms']:.1f} ms (paper's bound 50 ms); load average after the "
          f"run {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
