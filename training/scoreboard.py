"""The honest scoreboard: AUROC within each dataset and each task type, with 95%
bootstrap intervals, beside the pooled number, and what the router learned (permutation
importance of its features on the validation split).

A pooled AUROC over several datasets mostly measures "which dataset / which question type" when
the model is right on one kind of question only (the embedded 135M model: yes/no answers); the
within-group numbers say whether a score ranks answers *of the same kind*. `training.fit` prints
and records this; `python -m training.scoreboard --router imad-router-v2` recomputes it for a
shipped router from its committed corpus and the validation split its checkpoint records.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from imad.errors import DatasetError
from imad.metrics import auroc
from training.metrics import METRICS

RESAMPLES = 1000
"""Bootstrap resamples per interval (percentile method, seeded)."""
LEVEL = 0.95
IMPORTANCE_REPEATS = 5
SHOWN_FEATURES = 8


def auroc_interval(labels: np.ndarray, p: np.ndarray, *, resamples: int = RESAMPLES,
                   seed: int = 0) -> dict[str, Any]:
    """AUROC with a percentile bootstrap interval over answers resampled with replacement
    (a resample holding one class is skipped); NaN where a class is missing."""
    y = np.asarray(labels, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    row: dict[str, Any] = {"n": int(y.size), "positive_rate": float(y.mean()) if y.size else math.nan,
                           "auroc": METRICS["auroc"].compute(y, p), "low": math.nan, "high": math.nan}
    if not math.isnan(row["auroc"]):
        row["low"], row["high"] = _bootstrap(y, p, auroc, resamples=resamples, seed=seed,
                                             both_classes=True)
    return row


def ece_interval(labels: np.ndarray, p: np.ndarray, *, resamples: int = RESAMPLES,
                 seed: int = 0) -> tuple[float, float]:
    """The 95% percentile bootstrap interval of ECE (15 equal-width bins), as `auroc_interval`
    resamples answers; NaN without answers. A calibration gap measured on 200 answers moves by
    several hundredths between resamples: the interval says how many."""
    y = np.asarray(labels, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    if y.size == 0:
        return math.nan, math.nan
    return _bootstrap(y, p, METRICS["ece"].compute, resamples=resamples, seed=seed,
                      both_classes=False)


def _bootstrap(y: np.ndarray, p: np.ndarray, statistic: Callable[[np.ndarray, np.ndarray], float],
               *, resamples: int, seed: int, both_classes: bool) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        pick = rng.integers(0, y.size, y.size)
        if not both_classes or 0 < y[pick].sum() < y.size:
            values.append(statistic(y[pick], p[pick]))
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def scoreboard(labels: np.ndarray, scores: dict[str, np.ndarray], groups: dict[str, Sequence[str]],
               *, seed: int = 0) -> dict[str, Any]:
    """For each scorer: pooled AUROC and, for each grouping (e.g. "dataset", "task_type"), the
    AUROC within each group, all with bootstrap intervals."""
    y = np.asarray(labels)
    board: dict[str, Any] = {"pooled": {name: auroc_interval(y, p, seed=seed) for name, p in scores.items()}}
    for grouping, values in groups.items():
        values = np.asarray(values)
        board[grouping] = {
            group: {name: auroc_interval(y[values == group], np.asarray(p)[values == group], seed=seed)
                    for name, p in scores.items()}
            for group in sorted(set(values.tolist()))}
    return board


def permutation_importance(predict: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
                           labels: np.ndarray, names: Sequence[str], *,
                           repeats: int = IMPORTANCE_REPEATS, seed: int = 0) -> list[dict[str, Any]]:
    """Drop in validation AUROC when one feature's column is shuffled (mean and sd over
    `repeats`), largest first: which features the router's ranking leans on."""
    base = METRICS["auroc"].compute(labels, predict(x))
    rng = np.random.default_rng(seed)
    rows = []
    for column, name in enumerate(names):
        drops = []
        for _ in range(repeats):
            shuffled = x.copy()
            shuffled[:, column] = rng.permutation(shuffled[:, column])
            drops.append(base - METRICS["auroc"].compute(labels, predict(shuffled)))
        rows.append({"feature": name, "auroc_drop": float(np.mean(drops)), "sd": float(np.std(drops))})
    return sorted(rows, key=lambda row: -row["auroc_drop"])


def without_nan(value: Any) -> Any:
    """The scoreboard with NaN (a one-class group) as None, as a checkpoint stores it."""
    if isinstance(value, dict):
        return {key: without_nan(item) for key, item in value.items()}
    return None if isinstance(value, float) and math.isnan(value) else value


def format_scoreboard(board: dict[str, Any], importance: list[dict[str, Any]] | None = None) -> str:
    """Plain text: one line per group, each scorer's AUROC [95% interval]."""
    names = list(board["pooled"])
    lines = [f"{'AUROC [95% bootstrap]':<28}" + "".join(f"{name:>24}" for name in names)]
    for grouping, groups in board.items():
        rows = {"all": groups} if grouping == "pooled" else groups
        for group, row in rows.items():
            label = "pooled" if grouping == "pooled" else f"{grouping}={group}"
            n = row[names[0]]["n"]
            lines.append(f"{label + f' (n={n})':<28}" + "".join(f"{_cell(row[name]):>24}" for name in names))
    if importance:
        lines.append(f"what the router learned (AUROC drop when shuffled): {format_importance(importance)}")
    return "\n".join(lines)


def format_importance(importance: list[dict[str, Any]], shown: int = SHOWN_FEATURES) -> str:
    """The `shown` largest AUROC drops, "feature +0.012, …" (the fit summary, the evaluation
    report and `training.scoreboard` all print it this way)."""
    return ", ".join(f"{r['feature']} {r['auroc_drop']:+.3f}" for r in importance[:shown])


def _cell(row: dict[str, Any]) -> str:
    if math.isnan(row["auroc"]):
        return "n/a (one class)"
    return f"{row['auroc']:.3f} [{row['low']:.2f}, {row['high']:.2f}]"


def shipped_scoreboard(router_name: str | None, *, feature_cache: str | None = None,
                       write: bool = False) -> str:
    """The scoreboard of a shipped router on the validation split its checkpoint records,
    recomputed from the committed corpus (no training); `write` adds it to the checkpoint's
    metrics and re-renders its model card (weights and every other byte unchanged)."""
    from imad.router import Router
    from imad.router.registry import resolve_checkpoint
    from training.baselines import baseline_probabilities
    from training.corpus_table import load_corpus
    from training.datamodule import CorpusDataModule

    directory = resolve_checkpoint(router_name)
    router = Router.load(directory)
    record = router.config.record
    files = [entry.path for entry in (record.data.files or ())] if record.data is not None else []
    split = record.data.split if record.data is not None else None
    settings = record.training.settings if record.training is not None else None
    fraction = None if settings is None else settings.validation_fraction
    if not files or split is None or fraction is None or record.metrics is None:
        raise DatasetError(f"router {router.name} does not record its corpus files and validation "
                           "split, so its scoreboard cannot be recomputed without retraining")
    table = load_corpus(files, schema_version=router.feature_schema_version, feature_cache=feature_cache)
    module = CorpusDataModule(table, validation_fraction=fraction, split_seed=split.seed)
    if module.validation_index.size != split.validation:
        raise DatasetError(f"the recomputed validation split has {module.validation_index.size} rows, "
                           f"router {router.name} records {split.validation}: the corpus changed")
    x, y = module.rows("validation")
    index = module.validation_index
    train_x, train_y = module.rows("train")
    scores = {"router": router.predict_raw(x), **baseline_probabilities(
        train_x, train_y, x, module.scaler_mean, module.scaler_scale, module.confidence_column)}
    board = scoreboard(y, scores, {"dataset": [table.datasets[i] for i in index],
                                   "task_type": [table.task_types[i] for i in index]})
    importance = permutation_importance(router.predict_raw, x, y, router.feature_names)
    if write:
        metrics = {**record.metrics.to_dict(), "scoreboard": without_nan(board), "importance": importance}
        router.with_record(metrics=metrics).save(directory)
    return f"{router.name} (validation n={y.size})\n" + format_scoreboard(board, importance)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: typed errors print `error: …` and exit non-zero (`imad.commandline.entry`)."""
    from imad.commandline.entry import debug_requested, run_entry_point

    return run_entry_point("python -m training.scoreboard", lambda: _run(argv),
                           debug=debug_requested(argv))


def _run(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.scoreboard",
                                     description="within-dataset AUROC of a shipped router")
    parser.add_argument("--router", default=None)
    parser.add_argument("--feature-cache", default=None)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--write", action="store_true",
                        help="add it to the checkpoint's metrics and re-render its model card")
    args = parser.parse_args(argv)
    print(shipped_scoreboard(args.router, feature_cache=args.feature_cache, write=args.write))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
