"""Router ablations (notebooks/ablations.ipynb): the training objective and the input features.

- Objective: FocusCal vs BCE vs each FocusCal term alone (`training.loss.LOSSES`).
- Inputs: all 41 features vs a subset (e.g. `conf_initial` only). The other columns are set to
  their mean over the corpus, so the scaler maps them to 0 and the network sees no variation
  in them.
Each variant is trained from an already featurised table with the components `training.fit`
uses (split, scaler, `RouterModule`, Lightning, seed, best-epoch selection), without writing
a run directory or checkpoint, and scored on the same validation rows with `score_report`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import lightning as L
import numpy as np
import torch

import features
from imad.errors import ConfigError
from imad.router import Router
from training.config import FitConfig
from training.corpus_table import CorpusTable
from training.datamodule import CorpusDataModule
from training.export import build_router
from training.metrics import score_report
from training.module import RouterModule


@dataclass(frozen=True)
class VariantResult:
    """One ablation variant's router, its validation scores and metrics."""

    name: str
    router: Router
    labels: np.ndarray
    probabilities: np.ndarray
    metrics: dict[str, Any]


def mask_features(table: CorpusTable, keep: Sequence[str]) -> CorpusTable:
    """A copy of `table` whose columns not in `keep` hold their corpus mean (no information)."""
    unknown = sorted(set(keep) - set(features.FEATURE_NAMES))
    if unknown or not keep:
        raise ConfigError("keep", f"name features of the schema to keep; unknown: {unknown}")
    masked = table.features.copy()
    for column, name in enumerate(features.FEATURE_NAMES):
        if name not in keep:
            masked[:, column] = masked[:, column].mean()
    return replace(table, features=masked)


def train_variant(name: str, table: CorpusTable, config: FitConfig) -> VariantResult:
    """Train one router on `table` with `config` (loss, epochs, seed…) and score its
    validation rows; exports nothing."""
    threads = torch.get_num_threads()
    torch.set_num_threads(max(config.threads, 1))
    try:
        L.seed_everything(config.seed, workers=True, verbose=False)
        datamodule = CorpusDataModule(table, validation_fraction=config.validation_fraction,
                                      split_seed=config.split_seed, batch_size=config.batch_size,
                                      seed=config.seed)
        module = RouterModule(config.net_config, config.loss_config, config.loss,
                              config.learning_rate)
        trainer = L.Trainer(max_epochs=config.epochs, accelerator="cpu", devices=1,
                            deterministic=True, logger=False, enable_checkpointing=False,
                            enable_progress_bar=False, enable_model_summary=False,
                            num_sanity_val_steps=0)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have many workers.*")
            trainer.fit(module, datamodule=datamodule)
        if config.select_epoch == "best" and module.best_state is not None:
            module.net.load_state_dict(module.best_state)
        router = build_router(module.net, scaler_mean=datamodule.scaler_mean,
                              scaler_scale=datamodule.scaler_scale, tau=config.tau, name=name,
                              metadata_record={"ablation": name, "loss": config.loss})
    finally:
        torch.set_num_threads(threads)
    validation_x, validation_y = datamodule.rows("validation")
    p = router.predict_proba(validation_x)
    return VariantResult(name, router, validation_y, p, score_report(validation_y, p, tau=config.tau))


def run_ablations(table: CorpusTable, base: FitConfig,
                  variants: dict[str, dict[str, Any]]) -> dict[str, VariantResult]:
    """Each variant is `{"loss": …}` and/or `{"keep": [feature names]}` on top of `base`."""
    results = {}
    for name, settings in variants.items():
        keep = settings.get("keep")
        data = mask_features(table, keep) if keep else table
        config = replace(base, **{k: v for k, v in settings.items() if k != "keep"})
        results[name] = train_variant(name, data, config)
    return results
