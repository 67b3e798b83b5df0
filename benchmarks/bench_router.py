"""Benchmark: router latency, and the checkpoint's validation metrics against the baselines.

    python benchmarks/bench_router.py                             # the shipped checkpoint
    python benchmarks/bench_router.py --checkpoint checkpoints/my-router --corpus corpus/my-model

Latency: one scored and decided answer (feature extraction included: spaCy + the MLP + the per-feature
cues), a batch of 64 rows through `predict_proba` (features excluded), one row alone, and
`scored_rows` (p, u, every cue's effect and the OOD score: what the server's scoring processes
compute) of a batch of 4, the size of a serving batch at 32 clients.
Quality: the checkpoint's validation split is rebuilt from its recorded split seed and fraction;
on it the checkpoint, raw `conf_initial` alone and a logistic regression on the 41 features
(fitted on the training rows) are scored, next to the metrics recorded at export.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from imad.corpus_records import read_records
from imad.critique.schema import CritiqueResponse
from imad.decide import checkpoint_policy
from imad.router import DEFAULT_CHECKPOINT, Router
from training.config import DEFAULT_CORPUS
from training.datamodule import CorpusDataModule, corpus_files, load_corpus
from training.fit import baseline_probabilities, format_metrics
from training.metrics import score_report


def timed(function: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median and 90th percentile of `repeats` calls, in milliseconds."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=DEFAULT_CHECKPOINT)
    parser.add_argument("--corpus", nargs="+", default=None,
                        help="corpus the checkpoint was trained on (default: its recorded files)")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    router = Router.load(args.checkpoint)
    recorded = router.config.record.fit_settings
    corpus = args.corpus or list(recorded.corpus or ()) or list(DEFAULT_CORPUS)
    record = next(r for f in corpus_files(corpus) for r in read_records(f) if r.parsed)
    question, response = record.question["text"], CritiqueResponse.from_dict(record.parsed)

    policy = checkpoint_policy(router.config)
    policy.decide(router.score(question, response))  # warm-up: loads spaCy and the lexicons
    table = load_corpus(corpus, feature_cache=recorded.feature_cache,
                        schema_version=router.feature_schema_version)
    batch = table.features[:64]
    one = table.features[:1]
    decide_ms = timed(lambda: policy.decide(router.score(question, response)), args.repeats)
    batch_ms = timed(lambda: router.predict_proba(batch), args.repeats * 4)
    single_ms = timed(lambda: router.predict_proba(one), args.repeats * 4)
    served = table.features[:4]  # a serving batch (32 clients on 2 cores, bench_serve.py)
    scored_ms = timed(lambda: router.scored_rows(served), args.repeats * 4)
    print(f"checkpoint: {args.checkpoint} (torch threads: {torch.get_num_threads()})")
    print(f"decide, 1 question, features included: median {decide_ms[0]:.2f} ms, "
          f"p90 {decide_ms[1]:.2f} ms")
    print(f"predict_proba, batch of {len(batch)}, features excluded: median {batch_ms[0]:.3f} ms, "
          f"p90 {batch_ms[1]:.3f} ms ({batch_ms[0] / len(batch) * 1000:.1f} µs/row)")
    print(f"predict_proba, 1 row, features excluded: median {single_ms[0]:.3f} ms")
    print(f"scored_rows (p, u, 41 cues, OOD), batch of {len(served)}: median {scored_ms[0]:.3f} ms "
          f"({scored_ms[0] / len(served):.3f} ms/row)")

    datamodule = CorpusDataModule(
        table,
        validation_fraction=(0.2 if recorded.validation_fraction is None
                             else recorded.validation_fraction),
        split_seed=42 if recorded.split_seed is None else recorded.split_seed,
    )
    train_x, train_y = datamodule.rows("train")
    validation_x, validation_y = datamodule.rows("validation")
    scores = {
        "router": router.predict_proba(validation_x),
        **baseline_probabilities(train_x, train_y, validation_x, datamodule.scaler_mean,
                                 datamodule.scaler_scale, datamodule.confidence_column),
    }
    metrics = {
        "validation": {name: score_report(validation_y, p, tau=router.config.threshold.tau)
                       for name, p in scores.items()},
        "selection": "recomputed on the checkpoint's split",
    }
    print(format_metrics(metrics))
    recorded_metrics = router.config.record.metrics
    stored = (recorded_metrics.validation or {}).get("router") if recorded_metrics else None
    if stored is not None and stored.auroc is not None and stored.ece is not None:
        same = np.isclose(stored.auroc, metrics["validation"]["router"]["auroc"], equal_nan=True)
        print(f"recorded at export: AUROC {stored.auroc:.4f}, ECE {stored.ece:.4f} "
              f"({'matches' if same else 'DIFFERS from'} the recomputation)")


if __name__ == "__main__":
    main()
