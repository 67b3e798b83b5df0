"""Train the router and export its checkpoint: `python -m training.fit`.

    python -m training.fit          # the shipped corpus → checkpoints/imad-router-v2
    python -m training.fit --corpus corpus/my-model/ --output checkpoints/my-router
    python -m training.fit --config fit.toml --epochs 20 --early-stopping

Steps: seed everything (`seed_everything(seed, workers=True)`, `deterministic=True`), read and
featurise the corpus, split 80/20 stratified (seed 42), fit the scaler on the training rows,
train with Lightning, take the epoch with the lowest validation FocusCal (or the last), score
the validation rows with the router and with two baselines — raw `conf_initial` alone and a
logistic regression on the 41 features, fitted on the same training rows — and export the
checkpoint with all of it recorded. Same config and corpus → bit-identical predictions.
"""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.loggers import CSVLogger

from imad.commandline.entry import debug_requested, run_entry_point
from imad.router import Router
from training.baselines import baseline_probabilities
from training.config import FitConfig, config_from_args
from training.datamodule import CorpusDataModule, load_corpus
from training.export import build_router, export_router
from training.loss import class_balanced_alpha
from training.metrics import METRICS, score_report
from training.module import MONITOR, RouterModule
from training.scoreboard import format_scoreboard, permutation_importance, scoreboard, without_nan


@dataclass(frozen=True)
class FitResult:
    """A trained router, its validation metrics, and where it was written."""

    router: Router
    metrics: dict[str, Any]
    checkpoint: Path | None
    run_dir: Path
    validation_features: np.ndarray
    validation_labels: np.ndarray


def fit(config: FitConfig) -> FitResult:
    """Train, evaluate against the baselines, and (unless `config.export` is off) export."""
    threads = torch.get_num_threads()
    if config.threads:
        torch.set_num_threads(config.threads)
    try:
        return _fit(config)
    finally:
        torch.set_num_threads(threads)


def _fit(config: FitConfig) -> FitResult:
    # cuBLAS needs this for deterministic matmuls when a GPU accelerator is chosen.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    L.seed_everything(config.seed, workers=True, verbose=False)
    table = load_corpus(
        config.corpus, feature_cache=config.feature_cache, progress=config.progress_bar,
        schema_version=config.feature_schema,
    )
    datamodule = CorpusDataModule(
        table,
        validation_fraction=config.validation_fraction,
        split_seed=config.split_seed,
        batch_size=config.batch_size,
        seed=config.seed,
        num_workers=config.num_workers,
    )
    loss_config = config.loss_config
    if config.class_balanced_alpha:
        alpha0, alpha1 = class_balanced_alpha(datamodule.rows("train")[1])
        loss_config = replace(loss_config, alpha0=alpha0, alpha1=alpha1)
    module = RouterModule(config.net_config, loss_config, config.loss, config.learning_rate)
    run_dir = Path(config.run_dir)
    config.save(run_dir / "config.json")
    trainer = L.Trainer(
        max_epochs=config.epochs,
        accelerator=config.accelerator,
        devices=_devices(config.devices),
        strategy=config.strategy,
        deterministic=True,
        logger=CSVLogger(run_dir, name="logs"),
        callbacks=(
            [EarlyStopping(monitor=MONITOR, mode="min", patience=config.patience)]
            if config.early_stopping else []
        ),
        enable_checkpointing=False,  # Lightning's .ckpt files are pickles; the export is not
        enable_progress_bar=config.progress_bar,
        enable_model_summary=config.progress_bar,
        num_sanity_val_steps=0,
        log_every_n_steps=1,
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        warnings.filterwarnings("ignore", message=".*LeafSpec.*")
        trainer.fit(module, datamodule=datamodule)

    epochs_run = len(module.history)
    if config.select_epoch == "best" and module.best_state is not None:
        module.net.load_state_dict(module.best_state)
        selected = module.best_epoch
        note = (f"Exported epoch {selected} of {epochs_run} run (0-based), the one with the "
                "lowest validation FocusCal.")
    else:
        selected = epochs_run - 1
        note = f"Exported the last epoch ({selected}, 0-based) of {epochs_run} run."

    train_x, train_y = datamodule.rows("train")
    validation_x, validation_y = datamodule.rows("validation")
    router = build_router(
        module.net,
        scaler_mean=datamodule.scaler_mean,
        scaler_scale=datamodule.scaler_scale,
        tau=config.tau,
        feature_schema_version=config.feature_schema,
        ood_rows=(train_x, validation_x),
        name=Path(config.output).name,
        metadata_record={
            "seed": config.seed,
            "training": {
                "loss": {"name": config.loss, **loss_config.to_dict(),
                         "class_balanced_alpha": config.class_balanced_alpha},
                "optimizer": {"name": "Adam", "learning_rate": config.learning_rate,
                              "batch_size": config.batch_size, "max_epochs": config.epochs,
                              "epochs_run": epochs_run, "selected_epoch": selected,
                              "early_stopping": config.early_stopping},
                "config": config.to_dict(),
            },
            "data": {**table.summary, "split": datamodule.split_summary},
        },
    )
    scores = {
        "router": router.predict_proba(validation_x),
        **baseline_probabilities(
            train_x, train_y, validation_x, datamodule.scaler_mean, datamodule.scaler_scale,
            datamodule.confidence_column,
        ),
    }
    metrics = {
        "validation": {
            name: score_report(validation_y, p, tau=config.tau) for name, p in scores.items()
        },
        "selection": note,
        "tau": config.tau,
    }
    index = datamodule.validation_index
    board = scoreboard(validation_y, scores, {"dataset": [table.datasets[i] for i in index],
                                              "task_type": [table.task_types[i] for i in index]})
    importance = permutation_importance(router.predict_proba, validation_x, validation_y,
                                        router.feature_names)
    router = router.with_record(metrics={**metrics, "scoreboard": without_nan(board),
                                         "importance": importance})

    checkpoint = None
    if config.export and trainer.is_global_zero:
        checkpoint = export_router(router, config.output, probe=validation_x)
    (run_dir / "metrics.json").write_text(
        json.dumps({**metrics, "scoreboard": board, "importance": importance,
                    "history": module.history}, indent=2) + "\n", encoding="utf-8"
    )
    return FitResult(router, {**metrics, "scoreboard": board, "importance": importance}, checkpoint,
                     run_dir, validation_x, validation_y)


def _devices(value: str) -> int | str:
    return int(value) if value.lstrip("-").isdigit() else value


def format_metrics(metrics: dict[str, Any]) -> str:
    """A plain-text table of the validation metrics."""
    columns = (*METRICS, "trigger_rate")
    lines = [f"{'validation':<22}" + "".join(f"{c:>14}" for c in columns)]
    for name, row in metrics["validation"].items():
        cells = "".join(
            f"{'nan' if math.isnan(row[c]) else format(row[c], '.4f'):>14}" for c in columns
        )
        lines.append(f"{name:<22}{cells}")
    lines.append(f"(n = {metrics['validation']['router']['n']}) {metrics['selection']}")
    if "scoreboard" in metrics:  # within each dataset / task type: what the pooled number hides
        lines.append(format_scoreboard(metrics["scoreboard"], metrics.get("importance")))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: typed errors print `error: …` and exit 2 (usage) or 3 (`imad.commandline.entry`)."""
    return run_entry_point("python -m training.fit", lambda: _run(argv),
                           debug=debug_requested(argv))


def _run(argv: Sequence[str] | None) -> int:
    result = fit(config_from_args(argv))
    print(format_metrics(result.metrics))
    if result.checkpoint is not None:
        print(f"checkpoint: {result.checkpoint}")
    print(f"run: {result.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
