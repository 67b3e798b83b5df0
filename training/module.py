"""The router as a LightningModule: FocusCal training, per-epoch validation metrics.

Each training step minimises the configured objective (FocusCal by default; any single term or
BCE for ablations). Validation scores the whole validation split at the end of each epoch and
logs FocusCal and its terms, AUROC, ECE and Brier (on the progress bar and to the run's
metrics.csv). The module keeps, in memory, a copy of the weights of the epoch with the lowest
validation FocusCal, so `fit` can export the best epoch without Lightning's pickled `.ckpt`.
"""

from __future__ import annotations

import math
from typing import Any

import lightning as L
import torch

from imad.router.model import RouterNet, RouterNetConfig
from training.loss import FocusCalConfig, compute_loss
from training.metrics import auroc, brier_score, expected_calibration_error

MONITOR = "val/focuscal"
"""The metric early stopping and best-epoch selection watch (lower is better)."""


class RouterModule(L.LightningModule):
    """Trains a `RouterNet` with one of `training.loss.LOSSES`."""

    def __init__(
        self,
        net_config: RouterNetConfig,
        loss_config: FocusCalConfig,
        loss_name: str = "focuscal",
        learning_rate: float = 1e-3,
    ) -> None:
        super().__init__()
        self.net = RouterNet(net_config)
        self.loss_config = loss_config
        self.loss_name = loss_name
        self.learning_rate = learning_rate
        self.best_score = math.inf
        self.best_epoch: int | None = None
        self.best_state: dict[str, torch.Tensor] | None = None
        self.history: list[dict[str, float]] = []
        self._validation_outputs: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def forward(self, features: torch.Tensor, confidence: torch.Tensor) -> Any:
        return self.net(features, confidence)

    def training_step(self, batch: tuple[torch.Tensor, ...], batch_index: int) -> torch.Tensor:
        features, confidence, labels = batch
        output = self.net(features, confidence)
        terms = compute_loss(self.loss_name, output.p, output.u, labels, self.loss_config)
        size = labels.shape[0]
        self.log("train/loss", terms.total, on_step=False, on_epoch=True, prog_bar=True,
                 batch_size=size)
        return terms.total

    def on_validation_epoch_start(self) -> None:
        self._validation_outputs = []

    def validation_step(self, batch: tuple[torch.Tensor, ...], batch_index: int) -> None:
        features, confidence, labels = batch
        output = self.net(features, confidence)
        self._validation_outputs.append((output.p, output.u, labels))

    def on_validation_epoch_end(self) -> None:
        if not self._validation_outputs:
            return
        p, u, labels = (torch.cat(parts) for parts in zip(*self._validation_outputs, strict=True))
        self._validation_outputs = []
        focuscal = compute_loss("focuscal", p, u, labels, self.loss_config)
        objective = compute_loss(self.loss_name, p, u, labels, self.loss_config).total
        y, probabilities = labels.cpu().numpy(), p.detach().cpu().double().numpy()
        metrics = {
            MONITOR: float(focuscal.total),
            "val/loss": float(objective),
            "val/focal": float(focuscal.focal),
            "val/penalty": float(focuscal.penalty),
            "val/ece_term": float(focuscal.ece),
            "val/auroc": auroc(y, probabilities),
            "val/ece": expected_calibration_error(y, probabilities),
            "val/brier": brier_score(y, probabilities),
        }
        on_bar = {MONITOR, "val/auroc", "val/ece"}
        for name, value in metrics.items():
            self.log(name, value, prog_bar=name in on_bar)
        if self.trainer.sanity_checking:
            return
        self.history.append({"epoch": self.current_epoch, **metrics})
        if metrics[MONITOR] < self.best_score:
            self.best_score = metrics[MONITOR]
            self.best_epoch = self.current_epoch
            state = self.net.state_dict()
            self.best_state = {name: t.detach().cpu().clone() for name, t in state.items()}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.net.parameters(), lr=self.learning_rate)
