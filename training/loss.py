"""FocusCal, the router's training loss.

    FocusCal = L_AF + λ · L_CP + μ · ECE          defaults α0=2, α1=1, γ=2, τ=0.7, λ=6, μ=5, 15 bins

- L_AF, asymmetric focal loss: mean(−α_y (1 − p_t)^γ log p_t), p_t = p if y = 1 else 1 − p.
  α0 > α1 punishes a high p on a wrong answer (over-confidence) more than the reverse.
- L_CP, confidence penalty: mean over the batch of (1 − u)² where y = 0 ∧ p > τ, u² where
  y = 1 ∧ p < τ, 0 elsewhere: the uncertainty head u must flag the rows p gets wrong at τ.
  The two conditions select rows (they are not differentiated); gradients reach u only.
- ECE: Σ_b |B_b|/N · |mean(y in b) − mean(p in b)| over equal-width bins with the same edges
  as `training.metrics` (and sklearn's `calibration_curve`). Bin membership is a step function
  of p; the term is differentiated through the bin means of p.

Each term is a function of its own, so ablations can train on any one of them (`LOSSES`), and
BCE is there for comparison. α can be class-balanced (`class_balanced_alpha`), but only when
asked for: the caller passes the α it wants, nothing is overridden here.

`LOG_EPS`: every log is taken of max(p_t, 1e-7), so p exactly 0 or 1 gives a finite loss
(−log 1e-7 ≈ 16.1) and finite gradients; 1e-7 is above float32's smallest normal number and
far below any probability a calibrated router should output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from imad.errors import ConfigError

LOG_EPS = 1e-7


@dataclass(frozen=True)
class FocusCalConfig:
    """The loss's hyper-parameters."""

    alpha0: float = 2.0
    alpha1: float = 1.0
    gamma: float = 2.0
    tau: float = 0.7
    lambda_cp: float = 6.0
    mu_ece: float = 5.0
    n_bins: int = 15

    def __post_init__(self) -> None:
        for name in ("alpha0", "alpha1", "gamma", "lambda_cp", "mu_ece"):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0:
                raise ConfigError(name, f"must be a finite number ≥ 0, got {value!r}")
        if not 0.0 < self.tau < 1.0:
            raise ConfigError("tau", f"must be in (0, 1), got {self.tau!r}")
        if not isinstance(self.n_bins, int) or self.n_bins < 1:
            raise ConfigError("n_bins", f"must be a positive integer, got {self.n_bins!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class LossTerms(NamedTuple):
    """The objective being minimised (`total`) and every FocusCal term, for logging."""

    total: torch.Tensor
    focal: torch.Tensor
    penalty: torch.Tensor
    ece: torch.Tensor


def _log(probability: torch.Tensor) -> torch.Tensor:
    return torch.log(probability.clamp_min(LOG_EPS))


def asymmetric_focal_loss(
    p: torch.Tensor, y: torch.Tensor, alpha0: float = 2.0, alpha1: float = 1.0, gamma: float = 2.0
) -> torch.Tensor:
    """L_AF = mean(−α_y (1 − p_t)^γ log p_t)."""
    y = y.to(p.dtype)
    p_t = y * p + (1 - y) * (1 - p)
    alpha = y * alpha1 + (1 - y) * alpha0
    return torch.mean(-alpha * (1 - p_t).pow(gamma) * _log(p_t))


def confidence_penalty(
    p: torch.Tensor, u: torch.Tensor, y: torch.Tensor, tau: float = 0.7
) -> torch.Tensor:
    """L_CP = mean((1 − u)² · [y = 0 ∧ p > τ] + u² · [y = 1 ∧ p < τ])."""
    y = y.to(p.dtype)
    p_fixed = p.detach()
    confident_wrong = (1 - y) * (p_fixed > tau).to(p.dtype)
    doubtful_right = y * (p_fixed < tau).to(p.dtype)
    return torch.mean(confident_wrong * (1 - u).pow(2) + doubtful_right * u.pow(2))


def calibration_loss(p: torch.Tensor, y: torch.Tensor, n_bins: int = 15) -> torch.Tensor:
    """Differentiable ECE: Σ_b |Σ_{i∈b} y_i − Σ_{i∈b} p_i| / N (equal to the ECE formula)."""
    if p.numel() == 0:
        return p.sum()
    edges = torch.linspace(0.0, 1.0, n_bins + 1, dtype=torch.float64, device=p.device)
    # Same assignment as np.searchsorted(edges[1:-1], p): bins (a, b], the first [0, b].
    ids = torch.bucketize(p.detach().to(torch.float64), edges[1:-1], right=False)
    sum_p = p.new_zeros(n_bins).index_add(0, ids, p)
    sum_y = p.new_zeros(n_bins).index_add(0, ids, y.to(p.dtype))
    return torch.sum(torch.abs(sum_y - sum_p)) / p.numel()


def bce_loss(p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy on p, with the same log clamp as the focal term."""
    y = y.to(p.dtype)
    return torch.mean(-(y * _log(p) + (1 - y) * _log(1 - p)))


def focuscal_terms(
    p: torch.Tensor, u: torch.Tensor, y: torch.Tensor, config: FocusCalConfig
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(L_AF, L_CP, ECE), unweighted."""
    return (
        asymmetric_focal_loss(p, y, config.alpha0, config.alpha1, config.gamma),
        confidence_penalty(p, u, y, config.tau),
        calibration_loss(p, y, config.n_bins),
    )


def focuscal_loss(
    p: torch.Tensor, u: torch.Tensor, y: torch.Tensor, config: FocusCalConfig | None = None
) -> torch.Tensor:
    """FocusCal = L_AF + λ · L_CP + μ · ECE."""
    return compute_loss("focuscal", p, u, y, config or FocusCalConfig()).total


class _Terms(NamedTuple):
    focal: torch.Tensor
    penalty: torch.Tensor
    ece: torch.Tensor


def _focuscal(p: torch.Tensor, y: torch.Tensor, t: _Terms, c: FocusCalConfig) -> torch.Tensor:
    return t.focal + c.lambda_cp * t.penalty + c.mu_ece * t.ece


LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor, _Terms, FocusCalConfig], torch.Tensor]] = {
    "focuscal": _focuscal,
    "focal": lambda p, y, t, c: t.focal,
    "penalty": lambda p, y, t, c: t.penalty,
    "ece": lambda p, y, t, c: t.ece,
    "bce": lambda p, y, t, c: bce_loss(p, y),
}
"""Training objectives by name: FocusCal, each of its terms alone (ablations), and BCE."""


def compute_loss(
    name: str, p: torch.Tensor, u: torch.Tensor, y: torch.Tensor, config: FocusCalConfig
) -> LossTerms:
    """The objective `name` plus the three FocusCal terms (always computed, for logging)."""
    objective = LOSSES.get(name)
    if objective is None:
        raise ConfigError("loss", f"unknown loss {name!r}; choose one of {sorted(LOSSES)}")
    terms = _Terms(*focuscal_terms(p, u, y, config))
    return LossTerms(objective(p, y, terms, config), *terms)


def class_balanced_alpha(labels: np.ndarray) -> tuple[float, float]:
    """(α0, α1) = (N / 2N₀, N / 2N₁): inverse class frequency, mean weight 1 over the rows."""
    y = np.asarray(labels).reshape(-1)
    n_neg, n_pos = int(np.sum(y == 0)), int(np.sum(y == 1))
    if n_neg == 0 or n_pos == 0:
        raise ConfigError(
            "class_balanced_alpha",
            f"needs both classes in the training split (got {n_neg} wrong, {n_pos} right)",
        )
    return y.size / (2 * n_neg), y.size / (2 * n_pos)
