"""The live check of a certificate: an anytime-valid test that the kept error is still ≤ α.

After deployment, labels of kept answers arrive one by one (feedback, `imad log label`). Each is
x = 1 (wrong) or 0 (right); under the certificate's promise E[x] ≤ α. The test bets against it:
wealth W_t = Π (1 + λ_t (x_t − α)) with a bet λ_t ∈ [0, 1/(2α)] fixed before x_t is seen. Under
the promise W is a nonnegative supermartingale, so by Ville's inequality P(W ever reaches 1/δ)
≤ δ: the check may be read after every label, at any moment, and still raises a false alarm with
probability at most δ (a betting e-process, Waudby-Smith & Ramdas). The bet is the Kelly bet
(m − α)/(α(1 − α)) for the error m of the last `WINDOW` labels (shrunk toward α), so wealth
waits while the error is low and grows fast after a jump.

The state is a function of the ordered labels alone, so every server worker that recomputes it
from the shared decision log's labelled kept rows reads the same state; once the wealth has
crossed 1/δ the check stays violated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["WINDOW", "LiveCheck", "live_check"]

WINDOW = 50
"""Labels the bet's error estimate looks back on: short enough to follow a jump quickly."""
PRIOR = 5
"""Pseudo-labels at error α the estimate starts from (no bet on the first few labels)."""


@dataclass(frozen=True)
class LiveCheck:
    """The check's state after `labels` kept labels: the log-wealth, and whether (and at which
    label, 1-based) it crossed log(1/δ)."""

    alpha: float
    delta: float
    labels: int
    errors: int
    log_wealth: float
    violated_at: int | None

    @property
    def violated(self) -> bool:
        return self.violated_at is not None

    @property
    def e_value(self) -> float:
        return math.exp(min(self.log_wealth, 700.0))

    def to_dict(self) -> dict[str, object]:
        return {"alpha": self.alpha, "delta": self.delta, "labels": self.labels,
                "errors": self.errors, "e_value": self.e_value, "violated": self.violated,
                "violated_at": self.violated_at}

    def evidence(self) -> str:
        """The state in words (the log line when it rejects)."""
        verdict = (f"violated at label {self.violated_at}" if self.violated
                   else "holds so far")
        return (f"certificate check: {self.errors} of {self.labels} kept labelled answers wrong "
                f"(promise <= {self.alpha:g}); e-value {self.e_value:.3g} against threshold "
                f"{1 / self.delta:.3g}: {verdict}")


def bets(wrong: np.ndarray, alpha: float) -> np.ndarray:
    """λ_t for each label, from the labels before it only (predictable)."""
    before = np.concatenate([[0.0], np.cumsum(wrong, dtype=np.float64)])
    t = np.arange(wrong.size)
    start = np.maximum(t - WINDOW, 0)
    in_window = before[t] - before[start]
    seen = t - start
    estimate = (in_window + PRIOR * alpha) / (seen + PRIOR)
    kelly = (estimate - alpha) / (alpha * (1.0 - alpha))
    return np.clip(kelly, 0.0, 0.5 / alpha)


def live_check(wrong: Sequence[int] | np.ndarray, alpha: float, delta: float) -> LiveCheck:
    """The check's state after the kept labels `wrong` (1 wrong, 0 right), in label order."""
    outcomes = np.asarray(wrong, dtype=np.float64).reshape(-1)
    log_wealth = np.cumsum(np.log1p(bets(outcomes, alpha) * (outcomes - alpha)))
    crossed = np.flatnonzero(log_wealth >= math.log(1.0 / delta))
    return LiveCheck(alpha=alpha, delta=delta, labels=int(outcomes.size),
                     errors=int(outcomes.sum()),
                     log_wealth=float(log_wealth[-1]) if log_wealth.size else 0.0,
                     violated_at=int(crossed[0]) + 1 if crossed.size else None)
