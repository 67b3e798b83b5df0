"""Benchmark: router training wall time, and the trained router against the two baselines.

    python benchmarks/bench_training.py                       # the shipped corpus, 50 epochs
    python benchmarks/bench_training.py --corpus tests/fixtures/corpus_small --epochs 10

Times feature extraction (cold, no cache) and training + export (features cached) separately,
then prints the validation AUROC / ECE / Brier of the trained router and, on the same split, of
raw `conf_initial` alone and of a logistic regression on the 41 features. The checkpoint goes
to a temporary directory unless `--output` is given, so the shipped one is never overwritten.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from training.config import DEFAULT_CORPUS, FitConfig
from training.datamodule import load_corpus
from training.fit import fit, format_metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", default=list(DEFAULT_CORPUS))
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--output", default=None, help="checkpoint directory (default: temp)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "feature-cache"
        started = time.perf_counter()
        table = load_corpus(args.corpus, feature_cache=cache)
        extraction_s = time.perf_counter() - started

        config = FitConfig(
            corpus=tuple(args.corpus), epochs=args.epochs, seed=args.seed, progress_bar=False,
            feature_cache=str(cache), output=args.output or str(Path(scratch) / "checkpoint"),
            run_dir=str(Path(scratch) / "run"),
        )
        started = time.perf_counter()
        result = fit(config)
        training_s = time.perf_counter() - started

    summary = table.summary
    print(f"corpus: {', '.join(args.corpus)}: {summary['records']} records, "
          f"{summary['labelled']} labelled, {summary['parse_failures']} parse failures")
    print(f"feature extraction (cold, {table.features.shape[0]} rows): {extraction_s:.1f} s")
    epochs = result.router.config.record.training.optimizer.epochs_run
    print(f"training + export ({epochs} epochs, features cached): {training_s:.1f} s "
          f"({training_s / max(epochs, 1):.2f} s/epoch)")
    print(f"total wall time: {extraction_s + training_s:.1f} s")
    print(format_metrics(result.metrics))


if __name__ == "__main__":
    main()
