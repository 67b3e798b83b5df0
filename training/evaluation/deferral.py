"""Deferral curves: what escalating more questions buys, for several gates on the same questions.

Every question has a recorded single-agent answer (right or wrong, its tokens) and a recorded
debate answer (right or wrong, the debate's extra tokens). A gate orders the questions by a
score, lowest first; at escalation rate k/n the k lowest are debated and the rest keep their
single-agent answer. So accuracy(k) = mean of the final answers and tokens(k) = single tokens
of all + debate tokens of the k escalated, per question.

Ties are averaged exactly (`imad.metrics.escalated_totals`, the deferral core the report card's
curve shares): when the k-th cut falls inside a group of equal scores, each member counts as
escalated with the same probability, the expected value of breaking the tie at random. A
constant score is therefore the random gate's expected curve, and the oracle gate is the score
"single answer right" (the wrong answers first). The area under accuracy-vs-rate is the
trapezoid over the n + 1 points k/n. Pure numpy: the curves are checked by hand in tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from imad.errors import ConfigError
from imad.metrics import escalated_totals


@dataclass(frozen=True)
class Outcomes:
    """Per question: single-agent answer right and its tokens, debate answer right and its
    extra tokens (beyond the single answer)."""

    single_correct: np.ndarray
    single_tokens: np.ndarray
    debate_correct: np.ndarray
    debate_tokens: np.ndarray

    def __post_init__(self) -> None:
        sizes = {a.size for a in self._arrays()}
        if len(sizes) != 1 or 0 in sizes:
            raise ConfigError("deferral outcomes", f"need one value per question in each of the four "
                              f"arrays, got sizes {[a.size for a in self._arrays()]}")
        for name, array in zip(("single_tokens", "debate_tokens"),
                               (self.single_tokens, self.debate_tokens), strict=True):
            if not np.all(np.isfinite(array)) or np.any(array < 0):
                raise ConfigError(f"deferral outcomes {name}", "must be finite and ≥ 0")

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return (self.single_correct, self.single_tokens, self.debate_correct, self.debate_tokens)

    @property
    def size(self) -> int:
        return int(self.single_correct.size)


def outcomes(single_correct: Any, single_tokens: Any, debate_correct: Any,
             debate_tokens: Any) -> Outcomes:
    """`Outcomes` from sequences (booleans as 0/1, tokens as floats)."""
    return Outcomes(*(np.asarray(a, dtype=np.float64).ravel()
                      for a in (single_correct, single_tokens, debate_correct, debate_tokens)))


@dataclass(frozen=True)
class DeferralCurve:
    """One gate's curve: escalation rate k/n (k = 0…n), expected accuracy and tokens/question."""

    rate: np.ndarray
    accuracy: np.ndarray
    tokens: np.ndarray

    @property
    def area(self) -> float:
        """Area under accuracy vs rate (trapezoid on [0, 1])."""
        widths = np.diff(self.rate)
        return float(np.sum(widths * (self.accuracy[1:] + self.accuracy[:-1]) / 2))

    def to_dict(self) -> dict[str, Any]:
        return {"area": self.area, "rate": self.rate.tolist(), "accuracy": self.accuracy.tolist(),
                "tokens_per_question": self.tokens.tolist()}


def deferral_curve(score: Any, data: Outcomes) -> DeferralCurve:
    """The curve of the gate that escalates the lowest `score` first (ties averaged)."""
    score = np.asarray(score, dtype=np.float64).ravel()
    if score.size != data.size:
        raise ConfigError("deferral gate score", f"one score per question: {score.size} scores for "
                          f"{data.size} questions")
    if not np.all(np.isfinite(score)):
        raise ConfigError("deferral gate score", "scores must be finite (NaN sorts nowhere)")
    n = data.size
    gain = escalated_totals(score, data.debate_correct - data.single_correct, average_ties=True)
    extra = escalated_totals(score, data.debate_tokens, average_ties=True)
    accuracy = (data.single_correct.sum() + gain) / n
    tokens = (data.single_tokens.sum() + extra) / n
    return DeferralCurve(np.arange(n + 1) / n, accuracy, tokens)


GATES = ("router", "confidence_initial", "random", "oracle")
GATE_TITLES = {"router": "router p", "confidence_initial": "verbal confidence",
               "random": "random (expected)", "oracle": "oracle (wrong first)"}


def deferral_curves(data: Outcomes, router_p: Any, confidence: Any) -> dict[str, DeferralCurve]:
    """The four gates' curves: router p, verbal confidence, random (expected), oracle."""
    return {
        "router": deferral_curve(router_p, data),
        "confidence_initial": deferral_curve(confidence, data),
        "random": deferral_curve(np.zeros(data.size), data),
        "oracle": deferral_curve(data.single_correct, data),
    }


def render_table(name: str, curves: dict[str, DeferralCurve], rates: tuple[float, ...] = (
        0.0, 0.25, 0.5, 0.75, 1.0)) -> list[str]:
    """Markdown: per gate, the area and accuracy / tokens at a few escalation rates (linear
    between the points k/n: the expectation when the k-th cut is drawn at random)."""
    head = " | ".join(f"acc@{r:g} | tok@{r:g}" for r in rates)
    lines = [f"| {name}: gate | AUC | {head} |",
             "|---|---:|" + "---:|---:|" * len(rates)]
    for gate, curve in curves.items():
        cells = []
        for r in rates:
            accuracy = np.interp(r, curve.rate, curve.accuracy)
            tokens = np.interp(r, curve.rate, curve.tokens)
            cells.append(f"{accuracy:.3f} | {tokens:,.0f}")
        lines.append(f"| {GATE_TITLES.get(gate, gate)} | {curve.area:.3f} | {' | '.join(cells)} |")
    return lines
