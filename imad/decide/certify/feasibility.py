"""What a router can promise on given labels when it cannot promise α: the numbers of an
`Infeasible` answer.

- The base error μ bounds every method: if μ > α, the answers kept must be chosen among the
  1 − μ right ones plus at most α of the kept, so at least (μ − α)/(1 − α) of the traffic must
  be escalated, whatever the scorer.
- The smallest α this router certifies on these labels: the smallest α on a 0.001 grid for which
  some fixed sequence rejects its first hypothesis (the only way it certifies anything).
- How many more labels would certify α at the router's current curve: at each threshold whose
  labelled kept error r is below α, the kept count m whose Clopper–Pearson bound at error r·m
  reaches α, and the labels of traffic that many kept labels take at that threshold's coverage.
"""

from __future__ import annotations

import math

import numpy as np

from imad.decide.certify.binomial import least_kept, upper_bound
from imad.decide.certify.curve import RiskCurve

__all__ = ["START_SHARES", "least_escalation", "more_labels_needed", "sequence_starts",
           "smallest_alpha", "start_index"]

ALPHA_STEP = 0.001
START_SHARES = (0.0, 0.25, 0.5, 1.0)
"""Where the fixed sequences start: the strictest testable τ, and the τ keeping these shares of
the labelled answers."""
MAX_LABELS = 10**9


def least_escalation(base_error: float, alpha: float) -> float:
    """(μ − α)/(1 − α) when μ > α, else 0: the share any method must escalate."""
    return max(0.0, (base_error - alpha) / (1.0 - alpha))


def start_index(kept: np.ndarray, least: int, lowest: int) -> int | None:
    """The strictest grid index at or above `lowest` keeping at least `least` labelled answers
    (None: no threshold keeps that many)."""
    enough = np.flatnonzero(kept[lowest:] >= least)
    return lowest + int(enough[-1]) if enough.size else None


def sequence_starts(kept: np.ndarray, alpha: float, delta: float, lowest: int = 0
                    ) -> tuple[list[int], float]:
    """Where the fixed sequences start, and the level each is tested at (`ltt` docstring): the
    strictest τ keeping enough labels to reject at all, and the τ keeping a quarter, a half and
    all of them, each at δ/K for the K distinct starts; with too few labels for that, one
    sequence at δ. The starts are read from the kept counts, never from the labels."""
    least = least_kept(alpha, delta / len(START_SHARES))
    total = int(kept[lowest])
    starts = sorted({index for share in START_SHARES
                     if (index := start_index(kept, max(least, math.ceil(share * total)), lowest))
                     is not None}, reverse=True)
    if starts:
        return starts, delta / len(starts)
    single = start_index(kept, least_kept(alpha, delta), lowest)
    return ([] if single is None else [single]), delta


def smallest_alpha(curve: RiskCurve, delta: float, lowest: int = 0) -> float | None:
    """The smallest α on the 0.001 grid that the fixed sequences certify (module docstring):
    some sequence's first hypothesis is rejected, its bound at its level ≤ α."""
    bounds: dict[float, np.ndarray] = {}
    for alpha in np.round(np.arange(1, 1000) * ALPHA_STEP, 3):
        starts, level = sequence_starts(curve.kept, float(alpha), delta, lowest)
        if level not in bounds:
            bounds[level] = curve.upper_bound(level)
        if any(bounds[level][start] <= alpha for start in starts):
            return float(alpha)
    return None


def more_labels_needed(curve: RiskCurve, alpha: float, delta: float, lowest: int = 0
                       ) -> tuple[int, int] | None:
    """(more kept labels, more labels of traffic) that would certify α if the router's curve
    stayed as labelled; the threshold needing the fewest labels of traffic is taken. None when
    no threshold's labelled kept error is under α (more labels would not help)."""
    rate = curve.kept_error()[lowest:]
    kept = curve.kept[lowest:]
    usable = (kept > 0) & (rate < alpha)
    if not usable.any():
        return None
    rate, kept = rate[usable], kept[usable]
    low, high = np.zeros_like(rate), np.full_like(rate, math.log(MAX_LABELS))
    for _ in range(60):  # bisection on log m, every threshold at once
        middle = (low + high) / 2.0
        m = np.exp(middle)
        reaches = upper_bound(rate * m, m, delta) <= alpha
        high, low = np.where(reaches, middle, high), np.where(reaches, low, middle)
    needed_kept = np.maximum(np.ceil(np.exp(high)), least_kept(alpha, delta))
    needed_labels = needed_kept * curve.labelled / kept
    best = int(np.argmin(needed_labels))
    return (max(0, int(needed_kept[best]) - int(kept[best])),
            max(0, math.ceil(needed_labels[best]) - curve.labelled))
