"""The risk–coverage curve of labelled answers on the fixed threshold grid.

The grid is declared before any label is read: τ ∈ {0.001, 0.002, …, 0.999}, the same for every
router and every log. A grid chosen from the labels (say, the labelled score where the error
first drops under α) would test hypotheses picked by the data they are tested on; a fixed grid
tests the same ones whatever the labels say. Its step costs nothing in a fixed-sequence test
(there is no Bonferroni division by its size), only resolution.

At grid point τ an answer is kept when p ≥ τ; `kept[j]` and `errors[j]` count the labelled
answers kept at `GRID[j]` and the wrong ones among them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["GRID", "GRID_STEP", "RiskCurve", "risk_curve"]

GRID_STEP = 0.001
GRID = np.round(np.arange(1, 1000) * GRID_STEP, 3)
"""The thresholds tested, strictest last; τ stays inside (0, 1) as a checkpoint's must."""


@dataclass(frozen=True)
class RiskCurve:
    """Counts of labelled answers kept (and wrong among them) at each grid threshold."""

    kept: np.ndarray
    errors: np.ndarray
    labelled: int
    wrong: int

    @property
    def base_error(self) -> float:
        """μ: the share of all labelled answers that are wrong."""
        return self.wrong / self.labelled

    def kept_error(self) -> np.ndarray:
        """The labelled error among kept answers at each threshold (NaN where none is kept)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.kept > 0, self.errors / np.maximum(self.kept, 1), np.nan)

    def upper_bound(self, delta: float) -> np.ndarray:
        """The Clopper–Pearson upper bound of the kept error at each threshold."""
        from imad.decide.certify.binomial import upper_bound

        return upper_bound(self.errors, self.kept, delta)

    def naive_index(self, alpha: float) -> int | None:
        """Where a hand-picked τ lands: the laxest threshold whose labelled kept error is ≤ α
        (no confidence at all); None when there is none."""
        below = np.flatnonzero((self.kept > 0) & (self.errors <= alpha * self.kept))
        return int(below[0]) if below.size else None


def grid_bins(p: np.ndarray) -> np.ndarray:
    """For each score, how many grid thresholds keep it (p ≥ τ): an index into the curve's
    cumulative counts."""
    return np.searchsorted(GRID, p, side="right")


def risk_curve(p: np.ndarray, right: np.ndarray) -> RiskCurve:
    """The curve of labelled answers with scores `p` and labels `right` (1 right, 0 wrong)."""
    scores = np.asarray(p, dtype=np.float64).reshape(-1)
    wrong = 1 - np.asarray(right, dtype=np.int64).reshape(-1)
    bins = grid_bins(scores)  # answer kept at GRID[j] exactly when j < bins
    size = GRID.size + 1
    kept_at_least = np.bincount(bins, minlength=size)
    wrong_at_least = np.bincount(bins, weights=wrong, minlength=size)
    # kept at j: answers whose bin exceeds j, a reverse cumulative sum
    kept = np.cumsum(kept_at_least[::-1])[::-1][1:]
    errors = np.cumsum(wrong_at_least[::-1])[::-1][1:].astype(np.int64)
    return RiskCurve(kept=kept.astype(np.int64), errors=errors, labelled=int(scores.size),
                     wrong=int(wrong.sum()))
