"""Exact binomial tests of "the error among kept answers exceeds α" (Clopper–Pearson).

With m kept answers of which e are wrong, drawn exchangeably from traffic whose kept error is r,
e is Binomial(m, r). The p-value of H0: r > α is P(Binomial(m, α) ≤ e), and it is ≤ δ exactly
when the Clopper–Pearson upper bound of r at confidence 1 − δ is ≤ α, so one table of critical
counts (the most errors m kept answers may hold and still reject) answers every threshold at once.
scipy is imported here, when certifying, never when deciding.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["critical_errors", "least_kept", "p_value", "upper_bound"]


def critical_errors(kept: np.ndarray | int, alpha: float, delta: float) -> np.ndarray:
    """The largest e with P(Binomial(m, α) ≤ e) ≤ δ for each kept count m; −1 where no count of
    errors rejects (m below `least_kept`)."""
    from scipy.stats import binom

    m = np.asarray(kept, dtype=np.int64)
    guess = binom.ppf(delta, m, alpha).astype(np.int64)  # smallest e with cdf(e) ≥ δ
    at_guess = binom.cdf(guess, m, alpha)
    critical = np.where(at_guess <= delta, guess, guess - 1)
    return np.where(m > 0, critical, -1)


def least_kept(alpha: float, delta: float) -> int:
    """The fewest kept answers that can reject at all: all right, (1 − α)^m ≤ δ."""
    m = math.ceil(math.log(delta) / math.log1p(-alpha))
    return m if (1.0 - alpha) ** m <= delta else m + 1


def p_value(errors: np.ndarray | int, kept: np.ndarray | int, alpha: float) -> np.ndarray:
    """P(Binomial(m, α) ≤ e): 1 where nothing is kept (no evidence at all)."""
    from scipy.stats import binom

    m = np.asarray(kept, dtype=np.int64)
    return np.where(m > 0, binom.cdf(errors, np.maximum(m, 1), alpha), 1.0)


def upper_bound(errors: np.ndarray | int, kept: np.ndarray | int, delta: float) -> np.ndarray:
    """The Clopper–Pearson upper confidence bound (level 1 − δ) of the kept error: 1 where nothing
    is kept or every kept answer is wrong."""
    from scipy.stats import beta

    e = np.asarray(errors, dtype=np.float64)
    m = np.asarray(kept, dtype=np.float64)
    inside = (m > 0) & (e < m)
    bound = beta.ppf(1.0 - delta, np.where(inside, e + 1.0, 1.0), np.where(inside, m - e, 1.0))
    return np.where(inside, bound, 1.0)
