"""Certify a threshold: Learn-then-Test with exact binomial p-values in fixed sequence.

For each τ on the fixed grid (`curve.GRID`), H0(τ): "the error among answers kept at τ exceeds
α". Its p-value is exact: P(Binomial(m, α) ≤ e) for e wrong among m kept labelled answers
(`binomial`). The hypotheses are tested in a fixed sequence from the strictest τ to the laxest,
each at level δ, stopping at the first that is not rejected; the laxest rejected τ is certified.
Fixed-sequence testing controls the family-wise error at δ with no division of δ by the grid's
size, so with monotone risk P(the certified τ's kept error > α) ≤ δ.

Where the sequences start. A threshold keeping fewer than m₀ = ⌈log δ / log(1 − α)⌉ labelled
answers cannot be rejected even with no error (29 at α = 0.1, δ = 0.05), so a sequence starting at
the strictest grid point (which keeps nothing) would stop at once; and one starting at the
strictest τ keeping m₀ stops there unless those m₀ answers are all right, which a flat risk curve
(a weak router) or a small α rarely gives. So K ≤ 4 sequences run, each at level δ/K (a union
bound keeps the family-wise error at δ): from the strictest τ keeping enough labels to reject at
δ/4, and from the τ keeping a quarter, a half and all of the labelled answers (distinct starts
only; with too few labels for δ/4, one sequence at δ). The starts are read from the scores
alone, never the labels, so every hypothesis tested is fixed before any label is read; the
laxest τ any sequence certifies is returned. The benchmark (`benchmarks/bench_certify.py`)
measures the validity on held-out data and the power against the best τ.

What the labels must cover. The guarantee holds for traffic exchangeable with the labelled
answers. Labels of kept answers only (a log served without shadow mode and without an audit share
of escalated answers) say nothing about answers with p below the lowest labelled p: given the
traffic's scores, τ is never certified below the lowest labelled p, and a warning says how much
traffic lies there. The escalation budget β is checked on the scores (labelled or not, plus the
unparsed answers that always escalate): the escalation rate needs no labels, so it costs no
share of δ, and the server's trigger counters watch it live.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from imad.constraints import Real, check_value
from imad.decide.certify.binomial import critical_errors, least_kept
from imad.decide.certify.certificate import Certificate, Infeasible, LabelSource, RouterIdentity
from imad.decide.certify.curve import GRID, GRID_STEP, RiskCurve, risk_curve
from imad.decide.certify.feasibility import (
    least_escalation,
    more_labels_needed,
    sequence_starts,
    smallest_alpha,
)
from imad.errors import DatasetError

__all__ = ["METHOD", "certify", "certified_index"]

OPEN_UNIT = Real(0.0, 1.0, closed="neither")
METHOD = (f"learn-then-test: exact binomial (Clopper-Pearson) p-values on the fixed grid "
          f"tau = {GRID[0]:g}, {GRID[0] + GRID_STEP:g}, ..., {GRID[-1]:g}, tested in fixed sequence "
          "from up to four label-free starts (the strictest tau keeping enough labels; a quarter, a "
          "half, all of them kept) to the laxest, each at delta/K, stopping at the first not rejected")
UNCOVERED_WARN_SHARE = 0.01
"""Share of traffic below the lowest labelled p above which the certificate warns."""


def certify(p: Sequence[float] | np.ndarray, right: Sequence[int] | np.ndarray, *, alpha: float,
            delta: float = 0.05, max_trigger_rate: float | None = None,
            traffic: Sequence[float] | np.ndarray | None = None, unparsed: int = 0,
            router: RouterIdentity | None = None, labels: LabelSource | None = None
            ) -> Certificate | Infeasible:
    """Certify τ for "error among kept answers ≤ `alpha` with confidence 1 − `delta`" from
    labelled scores `p` and labels `right` (1 right, 0 wrong), or say why not (module docstring).
    `traffic`: every scored answer's p, labelled or not (default: `p`); `unparsed`: answers that
    were never scored (they always escalate)."""
    alpha = check_value(alpha, OPEN_UNIT, "alpha (--max-error)")
    delta = check_value(delta, OPEN_UNIT, "delta (1 - --confidence)")
    if max_trigger_rate is not None:
        max_trigger_rate = check_value(max_trigger_rate, OPEN_UNIT, "max_trigger_rate (--max-trigger-rate)")
    scores, outcomes = _labelled(p, right)
    served = scores if traffic is None else _scores(traffic, "traffic")
    curve = risk_curve(scores, outcomes)
    lowest, warnings = _coverage(scores, served)
    index = certified_index(curve, alpha, delta, lowest)
    if isinstance(index, str):
        return _infeasible(index, curve, alpha, delta, lowest, warnings)
    tau = float(GRID[index])
    escalation = (int(np.sum(served < tau)) + unparsed) / (served.size + unparsed)
    if max_trigger_rate is not None and escalation > max_trigger_rate:
        answer = _infeasible("budget", curve, alpha, delta, lowest, warnings)
        message = (f"the laxest certified tau = {tau:g} escalates {escalation:.1%} of answers, more "
                   f"than --max-trigger-rate {max_trigger_rate:g}: error <= {alpha:g} and that "
                   "budget cannot both hold on these labels")
        return Infeasible(**{**answer.to_dict(), "message": message, "escalation_rate": escalation,
                             "warnings": tuple(warnings)})
    level = sequence_starts(curve.kept, alpha, delta, lowest)[1]
    bound = float(curve.upper_bound(level)[index])
    return Certificate(
        tau=tau, alpha=alpha, delta=delta, method=METHOD, labelled=curve.labelled,
        kept=int(curve.kept[index]), kept_errors=int(curve.errors[index]), upper_bound=bound,
        test_level=level,
        escalation_rate=escalation, max_trigger_rate=max_trigger_rate,
        router=router or RouterIdentity("unnamed", "unversioned", "unhashed", "unhashed"),
        labels=labels or LabelSource("not recorded"), warnings=tuple(warnings))


def certified_index(curve: RiskCurve, alpha: float, delta: float, lowest: int = 0) -> int | str:
    """The laxest grid index any fixed sequence certifies, or the `Infeasible` reason: "too few
    labels" (no threshold keeps enough to reject) or "not certifiable" (no sequence rejects its
    first hypothesis)."""
    starts, level = sequence_starts(curve.kept, alpha, delta, lowest)
    if not starts:
        return "too few labels"
    tested = slice(lowest, starts[0] + 1)
    rejected = curve.errors[tested] <= critical_errors(curve.kept[tested], alpha, level)
    certified = []
    for start in starts:
        if rejected[start - lowest]:
            not_rejected = np.flatnonzero(~rejected[:start - lowest])
            certified.append(lowest + (int(not_rejected[-1]) + 1 if not_rejected.size else 0))
    return min(certified) if certified else "not certifiable"


def _labelled(p: Sequence[float] | np.ndarray, right: Sequence[int] | np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    scores = _scores(p, "p")
    try:
        outcomes = np.asarray(right, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise DatasetError("labels must be 1 (right) or 0 (wrong)") from None
    if outcomes.size != scores.size:
        raise DatasetError(f"{scores.size} scores but {outcomes.size} labels; give one label per score")
    if scores.size == 0:
        raise DatasetError("no labelled answers to certify on; label answers first "
                           "(imad log label, or feedback on served answers)")
    bad = np.flatnonzero((outcomes != 0) & (outcomes != 1))
    if bad.size:
        raise DatasetError(f"label {int(bad[0])} is {float(outcomes[bad[0]])!r}; labels must be 1 (right) "
                           "or 0 (wrong)")
    return scores, outcomes.astype(np.int64)


def _scores(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    try:
        scores = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise DatasetError(f"{name} must be numbers in [0, 1]") from None
    bad = np.flatnonzero(~((scores >= 0.0) & (scores <= 1.0)))  # NaN fails both
    if bad.size:
        raise DatasetError(f"{name}[{int(bad[0])}] is {float(scores[bad[0]])!r}; scores must be "
                           "numbers in [0, 1]")
    return scores


def _coverage(scores: np.ndarray, served: np.ndarray) -> tuple[int, list[str]]:
    """The laxest grid index the labels cover, and a warning when much traffic lies below the
    lowest labelled p (module docstring)."""
    lowest_labelled = float(scores.min())
    below = int(np.sum(served < lowest_labelled))
    if below == 0:
        return 0, []
    lowest = max(0, int(np.searchsorted(GRID, lowest_labelled, side="right")) - 1)
    warnings = []
    if below / served.size > UNCOVERED_WARN_SHARE:
        warnings.append(
            f"{below} of {served.size} scored answers ({below / served.size:.1%}) have p below the "
            f"lowest labelled p {lowest_labelled:.4g}: no label speaks for them, so tau is not "
            f"certified below {GRID[lowest]:g}; label a random share of escalated answers (or run "
            "in shadow mode) to certify laxer thresholds")
    return lowest, warnings


def _infeasible(reason: str, curve: RiskCurve, alpha: float, delta: float, lowest: int,
                warnings: list[str]) -> Infeasible:
    mu = curve.base_error
    escalate = least_escalation(mu, alpha)
    smallest = smallest_alpha(curve, delta, lowest)
    more = more_labels_needed(curve, alpha, delta, lowest)
    promise = f"error <= {alpha:g} at {1 - delta:g} confidence"
    if reason == "too few labels":
        needed = least_kept(alpha, delta)
        head = (f"{curve.labelled} labelled answers are too few to promise {promise}: even with no "
                f"error it needs {needed} kept labelled answers")
    else:
        head = f"no threshold can promise {promise} on these {curve.labelled} labelled answers"
    parts = [head]
    if escalate > 0:
        parts.append(f"{mu:.1%} of them are wrong, so any method must escalate at least "
                     f"{escalate:.1%} of answers")
    parts.append(f"the smallest error this router can promise on these labels is {smallest:g}"
                 if smallest is not None else "this router can promise no error level on these labels")
    if more is None:
        parts.append(f"no threshold's labelled error is under {alpha:g}, so more labels would not "
                     "help this router: escalate everything or improve the router")
    else:
        parts.append(f"at the router's current curve about {more[0]} more kept labels "
                     f"({more[1]} more labelled answers in all) would certify {alpha:g}")
    return Infeasible(
        reason=reason, message="; ".join(parts), alpha=alpha, delta=delta, labelled=curve.labelled,
        base_error=mu, least_escalation=escalate, smallest_alpha=smallest,
        more_kept_labels=None if more is None else more[0],
        more_labels=None if more is None else more[1], warnings=tuple(warnings))
