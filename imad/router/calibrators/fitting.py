"""The numerics that fit calibrators, numpy only (the runtime needs no scikit-learn; the tests
check Platt and isotonic against scikit-learn to 1e-6): Newton's method for Platt and temperature,
pool-adjacent-violators for isotonic, Saerens et al.'s EM for the prior shift.
"""

from __future__ import annotations

import numpy as np

from imad.router.calibrators.base import MAX_PARAMETER, PRIOR_FLOOR, shift_prior, sigmoid

PLATT_C = 1.0
"""scikit-learn's default inverse L2 strength, so Platt equals `LogisticRegression()`."""


def fit_logistic(x: np.ndarray, y: np.ndarray, *, max_iterations: int = 200) -> tuple[float, float]:
    """Newton's method on C·Σ log loss + ½ slope² (the intercept unpenalised, as lbfgs does)."""
    slope, intercept = 0.0, 0.0
    design = np.column_stack([x, np.ones_like(x)])
    for _ in range(max_iterations):
        p = sigmoid(slope * x + intercept)
        gradient = PLATT_C * design.T @ (p - y) + np.array([slope, 0.0])
        weights = np.maximum(p * (1 - p), 1e-12)
        hessian = PLATT_C * (design.T * weights) @ design + np.diag([1.0, 0.0])
        step = np.linalg.solve(hessian + np.eye(2) * 1e-12, gradient)
        slope, intercept = slope - step[0], intercept - step[1]
        if np.max(np.abs(step)) < 1e-13:
            break
    return (float(np.clip(slope, -MAX_PARAMETER, MAX_PARAMETER)),
            float(np.clip(intercept, -MAX_PARAMETER, MAX_PARAMETER)))


def fit_inverse_temperature(x: np.ndarray, y: np.ndarray) -> float:
    """1/T minimising log loss of sigmoid(x / T), by Newton on the convex 1-D problem, bounded."""
    inverse = 1.0
    for _ in range(200):
        p = sigmoid(inverse * x)
        gradient = float(x @ (p - y))
        curvature = float((x * x) @ (p * (1 - p)))
        if curvature <= 1e-300:
            break
        step = gradient / curvature
        inverse = float(np.clip(inverse - step, 1 / MAX_PARAMETER, MAX_PARAMETER))
        if abs(step) < 1e-13:
            break
    return inverse


def fit_isotonic(raw: np.ndarray, y: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Pool-adjacent-violators on the unique scores (tied scores pooled first, as scikit-learn)."""
    unique, inverse, counts = np.unique(raw, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    blocks: list[list[float]] = []  # [sum of y, weight, number of unique points]
    for mean, count in zip(means, counts, strict=True):
        blocks.append([mean * count, float(count), 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, weight, size = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += weight
            blocks[-1][2] += size
    fitted = np.concatenate([[block[0] / block[1]] * block[2] for block in blocks])
    return tuple(float(v) for v in unique), tuple(float(v) for v in np.clip(fitted, 0.0, 1.0))


def jeffreys_rate(y: np.ndarray) -> float:
    """The share of 1s as the posterior mean under Jeffreys' Beta(½, ½) prior, kept off 0 and 1."""
    return float(np.clip((y.sum() + 0.5) / (y.size + 1.0), PRIOR_FLOOR, 1 - PRIOR_FLOOR))


def estimate_target_prior(raw: np.ndarray, training_prior: float, *, tolerance: float = 1e-10,
                          max_iterations: int = 10_000) -> float:
    """Saerens et al.'s EM: the prior π under which the re-weighted scores average to π."""
    prior = training_prior
    for _ in range(max_iterations):
        updated = float(np.clip(shift_prior(raw, training_prior, prior).mean(),
                                PRIOR_FLOOR, 1 - PRIOR_FLOOR))
        if abs(updated - prior) < tolerance:
            return updated
        prior = updated
    return prior
