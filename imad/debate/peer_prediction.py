"""AceMAD's arithmetic: peer-prediction scores, multiplicative weights, aggregation.

Pure functions over belief distributions (tuples over the options, summing to 1), shared by the
AceMAD back-end and the tests that check them against hand-computed values:

    Q̄₋ᵢ = mean_{j≠i} p_j,   S_i = 1 − ‖q̂_i − Q̄₋ᵢ‖²,   w_i ← w_i · exp(η S_i) (normalised),
    answer = argmax_y Σ_i w_i^γ p_i(y)   (soft)   or   Σ_i w_i^γ [y = answer_i]   (hard).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from imad.debate.beliefs import Distribution, one_hot, uniform


def mean_of_others(beliefs: Sequence[Distribution], i: int) -> Distribution:
    """Q̄₋ᵢ: the mean belief of every agent but i."""
    others = [b for j, b in enumerate(beliefs) if j != i]
    return tuple(sum(values) / len(others) for values in zip(*others, strict=True))


def peer_prediction_scores(beliefs: Sequence[Distribution],
                           predictions: Sequence[Distribution | None]) -> list[float | None]:
    """S_i = 1 − ‖q̂_i − Q̄₋ᵢ‖² (a Brier score); None where agent i made no prediction."""
    scores: list[float | None] = []
    for i, prediction in enumerate(predictions):
        if prediction is None:
            scores.append(None)
            continue
        realised = mean_of_others(beliefs, i)
        scores.append(1.0 - sum((q - r) ** 2 for q, r in zip(prediction, realised, strict=True)))
    return scores


def update_weights(weights: Sequence[float], scores: Sequence[float | None],
                   eta: float) -> tuple[float, ...]:
    """w_i ← w_i · exp(η S_i), normalised to sum 1. A missing score counts as the round's mean.

    Computed as w_i · exp(η S_i − m), m the largest η S_j of an agent with weight (the
    normalisation cancels it): no exp() overflows for any finite η, and the heaviest-scoring
    agent keeps a factor of 1, so the total is never 0."""
    known = [s for s in scores if s is not None]
    neutral = sum(known) / len(known) if known else 0.0
    exponents = [eta * (neutral if s is None else s) for s in scores]
    top = max((x for w, x in zip(weights, exponents, strict=True) if w > 0), default=0.0)
    raised = [w * math.exp(x - top) for w, x in zip(weights, exponents, strict=True)]
    total = sum(raised)
    return tuple(w / total for w in raised)


def aggregate(weights: Sequence[float], beliefs: Sequence[Distribution], gamma: float,
              answers: Sequence[int | None] | None = None) -> tuple[float, ...]:
    """Σ_i w_i^γ p_i (soft), or Σ_i w_i^γ one_hot(answer_i) when `answers` is given (hard).

    Stays positive within AceMADConfig's bounds: the heaviest of N <= 64 normalised weights is
    >= 1/64, and (1/64)^γ for γ <= 100 is ~1e-181, far above float underflow."""
    n_options = len(beliefs[0])
    support = [0.0] * n_options
    for i, weight in enumerate(weights):
        if answers is not None:
            if answers[i] is None:
                continue
            votes = one_hot(answers[i], n_options)
        else:
            votes = beliefs[i]
        for y in range(n_options):
            support[y] += weight ** gamma * votes[y]
    return tuple(support)


def choose(support: Sequence[float], preference: Sequence[int]) -> int:
    """argmax of `support`; ties go to the first tied option in `preference` (agent order),
    then to the lowest index."""
    best = max(support)
    tied = [y for y, s in enumerate(support) if s >= best - 1e-12]
    for y in preference:
        if y in tied:
            return y
    return tied[0]


def spread_belief(index: int | None, confidence: float | None, n: int) -> Distribution:
    """`confidence` on option `index`, the rest spread evenly (one-hot without a confidence)."""
    if index is None:
        return uniform(n)
    if confidence is None:
        return one_hot(index, n)
    rest = (1.0 - confidence) / (n - 1)
    return tuple(confidence if y == index else rest for y in range(n))
