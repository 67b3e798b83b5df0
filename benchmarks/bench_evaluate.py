"""Benchmark: zero-shot calibration of a router on ≥ 200 questions per dataset (SPEC §10).

    python benchmarks/bench_evaluate.py                               # 200 × the 6 built-ins
    python benchmarks/bench_evaluate.py --limit 5 --dataset mmlu      # a smoke run
    python benchmarks/bench_evaluate.py --llm openai:qwen@http://127.0.0.1:8000/v1 --workers 8

Runs `training.evaluate` twice: cold (answers generated, or reused from the corpus cache under
`--corpus-dir` if an earlier run made them) and warm (every answer cached: features, scoring,
report and plots only), and prints the times and the report. Without `--router`, the shipped
checkpoint is used; if it is not there yet, a router is trained for the run (10 epochs) on the
shipped corpus (an error says how to build it while it is too small), and the output says so.
Note: with the embedded model, a numeric question (GSM8K, BBH's counting and arithmetic tasks)
may crash llama.cpp until the schema's number pattern is fixed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from imad.router import DEFAULT_CHECKPOINT
from training.evaluate import evaluate
from training.evaluation.config import BUILT_IN_DATASETS, EvaluateConfig


def quick_router(folder: Path) -> Path:
    """Train a 10-epoch router on the notebook corpus choice; return its checkpoint."""
    from training.config import FitConfig
    from training.evaluation.corpus_choice import notebook_corpus
    from training.fit import fit

    choice = notebook_corpus()
    print(f"no router at {DEFAULT_CHECKPOINT}: training one for this run on {choice.explanation}")
    config = FitConfig(corpus=choice.paths, epochs=10, progress_bar=False,
                       output=str(folder / "imad-router-bench"), run_dir=str(folder / "run"))
    return fit(config).checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", nargs="+", default=list(BUILT_IN_DATASETS))
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--router", default=None)
    parser.add_argument("--llm", default="local")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--corpus-dir", default="corpus", help="answer cache (reruns are free)")
    parser.add_argument("--out", default="runs/bench-evaluate")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        router = args.router
        if router is None:
            router = str(DEFAULT_CHECKPOINT if DEFAULT_CHECKPOINT.is_dir() else quick_router(Path(scratch)))
        config = EvaluateConfig(datasets=tuple(args.dataset), router=router, llm=args.llm,
                                limit=args.limit, corpus_dir=args.corpus_dir, out=args.out,
                                workers=args.workers, progress=False)
        started = time.perf_counter()
        cold = evaluate(config)
        cold_s = time.perf_counter() - started
        started = time.perf_counter()
        evaluate(config)
        warm_s = time.perf_counter() - started

    datasets = cold.document["datasets"]
    questions = sum(d["questions"] for d in datasets.values())
    generated = sum(d["generated_answers"] for d in datasets.values())
    tokens = sum(d["tokens"]["per_question"] * d["questions"] for d in datasets.values())
    print(f"router: {router}; model: {cold.document['llm']['model_id']}")
    print(f"{questions} questions in {len(datasets)} datasets, {generated} answers generated, "
          f"{questions - generated} reused from {args.corpus_dir}; {tokens / questions:.0f} tokens/question")
    print(f"cold run: {cold_s:.1f} s ({cold_s / max(generated, 1):.1f} s per generated answer)")
    print(f"warm run (all answers cached): {warm_s:.1f} s")
    print(cold.markdown)
    print(f"report: {cold.markdown_path}")


if __name__ == "__main__":
    main()
