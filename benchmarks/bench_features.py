"""Benchmark of the 41-feature extractor (SPEC §4): throughput, latency, where the time goes.

    python benchmarks/bench_features.py [--data PATH] [--n 500] [--batch-size 64]

Targets on the 2-core development machine: ≥ 40 responses/s batched, median single-response
latency under the iMAD paper's 50 ms.

The corpus of real LLM self-critiques does not exist yet, so the 500 responses are built from
real text: PubMedQA PQA-L (`../shared/datasets/pubmedqa/pqal.jsonl`, MIT, see its SOURCE.md).
For each item the question is the PubMedQA question; the initial reasoning is the abstract's
opening sentences and the critique the authors' conclusion (`long_answer`), each cut at a
sentence boundary to at most 600 characters — the length the self-critique JSON schema allows
per field, so these are responses of typical length. Answers and confidences are drawn with a
fixed seed (they do not affect the timing).

Reported: responses/s for one-at-a-time `extract` and for `extract_batch` with 1 and 2
processes; median and p90 single-response latency; and a breakdown per stage over the same
texts — the spaCy tokenizer and each pipeline component, textstat readability (with textstat's
caches cleared first), lexicon matching, and the remaining pure-Python feature code.
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

from features import extract, extract_batch  # noqa: E402
from features.extractor import ParsedText, load_lexicons  # noqa: E402
from features.lexical import lexical_features, negation_count  # noqa: E402
from features.pipeline import SPACY_MODEL, clip_text, load_pipeline  # noqa: E402
from features.question import question_features  # noqa: E402
from features.readability import load_textstat, readability_features  # noqa: E402
from features.surface import surface_features  # noqa: E402
from features.syntax import syntax_features  # noqa: E402
from imad.critique.schema import CritiqueResponse  # noqa: E402

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "datasets" / "pubmedqa" / "pqal.jsonl"
FIELD_CHARS = 600  # imad.critique.schema.response_schema's default maxLength per text field
LABELS = ("yes", "no", "maybe")


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


def time_single(questions, responses) -> tuple[list[float], float, np.ndarray]:
    """Wall-clock latency of each `extract` call, total CPU seconds, and the rows."""
    latencies, rows = [], []
    cpu_start = time.process_time()
    for question, response in zip(questions, responses, strict=True):
        start = time.perf_counter()
        rows.append(extract(question, response))
        latencies.append(time.perf_counter() - start)
    return latencies, time.process_time() - cpu_start, np.stack(rows)


def time_batch(questions, responses, batch_size: int,
               n_process: int) -> tuple[float, float, np.ndarray]:
    """Wall-clock and CPU seconds (this process only) of one `extract_batch` call, and rows."""
    cpu_start, start = time.process_time(), time.perf_counter()
    matrix = extract_batch(questions, responses, batch_size=batch_size, n_process=n_process)
    return time.perf_counter() - start, time.process_time() - cpu_start, matrix


def breakdown(questions, responses, batch_size: int) -> tuple[dict[str, float], float]:
    """Seconds per stage over all texts, each stage timed on its own, and the seconds the
    (disabled) lemmatizer would add."""
    nlp = load_pipeline()
    lexicons = load_lexicons()
    texts = [clip_text(text) for question, response in zip(questions, responses, strict=True)
             for text in (question, response.initial_reasoning, response.critique)]
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    docs = [nlp.make_doc(text) for text in texts]
    seconds["spaCy tokenizer"] = time.perf_counter() - start
    for name, component in nlp.pipeline:
        start = time.perf_counter()
        docs = list(component.pipe(docs, batch_size=3 * batch_size))
        seconds[f"spaCy {name}"] = time.perf_counter() - start
    # The lemmatizer is disabled in features.pipeline; time it once to show what that saves.
    import spacy

    lemmatizer = spacy.load(SPACY_MODEL).get_pipe("lemmatizer")
    start = time.perf_counter()
    docs = list(lemmatizer.pipe(docs, batch_size=3 * batch_size))  # sets lemmas only
    lemmatizer_seconds = time.perf_counter() - start
    parsed = [ParsedText.from_doc(doc) for doc in docs]
    groups = [parsed[i:i + 3] for i in range(0, len(parsed), 3)]

    clear_textstat_caches()
    start = time.perf_counter()
    for _, reasoning, critique in groups:
        readability_features(reasoning.text)
        readability_features(critique.text)
    seconds["textstat readability"] = time.perf_counter() - start

    start = time.perf_counter()
    for text in parsed:
        ParsedText.from_doc(text.doc)
    for _, reasoning, critique in groups:
        lexical_features(reasoning.lexicon_tokens, lexicons)
        lexical_features(critique.lexicon_tokens, lexicons)
        negation_count(critique.lexicon_tokens, lexicons)
    seconds["lexicons (tokens + matching)"] = time.perf_counter() - start

    start = time.perf_counter()
    for question, reasoning, critique in groups:
        question_features(question.text, question.doc)
        for text in (reasoning, critique):
            surface_features(text.doc)
            syntax_features(text.doc)
    seconds["question/surface/syntax code"] = time.perf_counter() - start
    return seconds, lemmatizer_seconds


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

    start = time.perf_counter()
    load_pipeline(), load_textstat(), load_lexicons()
    print(f"one-time load (spaCy pipeline, textstat + CMU dictionary, lexicons): "
          f"{time.perf_counter() - start:.2f} s")
    extract(questions[0], responses[0])  # warm-up

    # The machine may be shared: CPU seconds per response (one process) tell the cost without
    # the contention, wall-clock seconds what a user of this machine gets right now.
    latencies, single_cpu, single = time_single(questions, responses)
    single_rate = args.n / sum(latencies)
    median_ms = 1000 * statistics.median(latencies)
    p90_ms = 1000 * statistics.quantiles(latencies, n=10)[-1]
    print(f"single  extract():                   {single_rate:7.1f} responses/s   "
          f"median {median_ms:.1f} ms, p90 {p90_ms:.1f} ms per response; "
          f"CPU {1000 * single_cpu / args.n:.1f} ms/response")
    rates = {}
    for n_process in (1, 2):
        elapsed, cpu, matrix = time_batch(questions, responses, args.batch_size, n_process)
        rates[n_process] = args.n / elapsed
        cpu_note = (f"CPU {1000 * cpu / args.n:.1f} ms/response" if n_process == 1
                    else "CPU in workers not measured")
        print(f"batched extract_batch(n_process={n_process}): {rates[n_process]:7.1f} "
              f"responses/s   ({elapsed:.2f} s, batch_size={args.batch_size}; {cpu_note}; "
              f"rows identical to single extract(): {np.array_equal(matrix, single)})")

    seconds, lemmatizer_seconds = breakdown(questions, responses, args.batch_size)
    total = sum(seconds.values())
    print(f"where the time goes (stages timed separately, {total:.2f} s in all, "
          f"{1000 * total / args.n:.1f} ms per response):")
    for stage, value in seconds.items():
        print(f"  {stage:<32} {value:6.2f} s  {100 * value / total:5.1f} %  "
              f"{1000 * value / args.n:6.2f} ms/response")

    print(f"  (not run: the lemmatizer, disabled, would add about {lemmatizer_seconds:.2f} s, "
          f"{1000 * lemmatizer_seconds / args.n:.2f} ms/response)")

    best = max(rates.values())
    ok = best >= 40 and median_ms < 50
    print(f"targets: batched ≥ 40 responses/s: {best:.1f} {'met' if best >= 40 else 'MISSED'}; "
          f"median single < 50 ms: {median_ms:.1f} ms {'met' if median_ms < 50 else 'MISSED'}; "
          f"load average after the run {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
