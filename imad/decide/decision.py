"""What the policy decided for one question, and why (SPEC §2: every result carries p and the
decision; SPEC §14: a `imad.decide.Policy` turns the router's `RouterScore` into it).

A `RouterDecision` is the whole verdict on one self-critique: the score p, the threshold τ,
whether to escalate to a debate (p < τ), short human-readable reasons, and whether the response
could be parsed at all. An unparsed response has no score and always escalates. `values()` gives
each of its fields by the name `imad.decide.schema` declares it under; every view of a decision
(`to_dict`, the server's body, header and log line, the span, the CLI's report, the metrics'
outcome, the decision log) is taken from those values through the schema.

Fail safe: a score that is not a finite number (a damaged router, an overflow) is
never compared with τ. The decision escalates, carries `p = None` and `uncertainty = None`
(so its JSON never holds NaN), `score_status = "non_finite"`, and the reason names the value.

Under drift a decision also records where its τ came from (`tau_source`: the
checkpoint, the request or pipeline, or a `TriggerBudget`) and how unlike the router's training
rows the answer is (`ood_score`, `ood`; None when the checkpoint has no OOD statistics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from imad.decide.schema import (
    BELOW_TAU,
    CERTIFICATE_VIOLATED,
    KEPT,
    NON_FINITE,
    OOD_ESCALATED,
    PARSED,
    SCORED,
    UNPARSED,
    UNSCORED,
    view,
)
from imad.decide.score import Cue, RouterScore


@dataclass(frozen=True)
class RouterDecision:
    """The router's verdict on one answer: keep it (p ≥ τ) or escalate to a debate (p < τ)."""

    id: str
    p: float | None
    """P(answer correct); None when the response could not be parsed or the score was not
    finite (`score_status` says which)."""
    tau: float
    escalate: bool
    reasons: tuple[str, ...]
    parse_status: str = PARSED
    """`"parsed"`, or `"unparsed"` when the self-critique could not be parsed."""
    parse_error: str | None = None
    uncertainty: float | None = None
    """The auxiliary uncertainty head u; None when unparsed."""
    cues: tuple[Cue, ...] = ()
    """The features that moved p most in the direction of the decision."""
    score_status: str = SCORED
    """`"scored"`, `"unscored"` (unparsed response) or `"non_finite"` (the router's score was
    NaN or infinite: escalated, p withheld)."""
    tau_source: str = "checkpoint"
    """Where τ came from, one of `imad.decide.schema.TAU_SOURCES`."""
    ood_score: float | None = None
    """How unlike the training rows the answer's features are; None without OOD statistics or
    without a score."""
    ood: bool | None = None
    """True when `ood_score` is above the checkpoint's OOD threshold; None when not scored."""
    ood_policy: str = "flag"
    """What `ood` did: "flag" (reported only) or "escalate" (an unfamiliar answer escalates)."""
    would_escalate: bool | None = None
    """In shadow mode (`Policy(..., shadow=True)`), what the policy decided: `escalate` is then
    False (the single answer is served, no debate runs); None outside shadow mode."""
    score: RouterScore | None = field(default=None, compare=False, repr=False)
    """The score it was decided from (`Policy.decide` keeps it): the raw score and every
    feature's value, which the decision log records."""

    @property
    def keep(self) -> bool:
        return not self.escalate

    @property
    def outcome(self) -> str:
        """Why the answer was kept or escalated, one of `schema.OUTCOMES` (what metrics count), so no
        caller recomputes it from the other fields."""
        if not self.escalate:
            return KEPT
        if self.parse_status == UNPARSED:
            return UNPARSED
        if self.score_status == NON_FINITE or self.p is None:
            return NON_FINITE
        if self.p < self.tau:
            return BELOW_TAU
        if self.ood is True and self.ood_policy == "escalate":
            return OOD_ESCALATED
        return CERTIFICATE_VIOLATED  # kept by τ and OOD: escalated by `Policy.escalate_all`

    def values(self) -> dict[str, Any]:
        """Every field whose origin is the decision (`imad.decide.schema`), as JSON values."""
        score = self.score
        return {
            "id": self.id, "p": self.p, "tau": self.tau, "escalate": self.escalate,
            "reasons": list(self.reasons), "parse_status": self.parse_status,
            "parse_error": self.parse_error, "uncertainty": self.uncertainty,
            "cues": [cue._asdict() for cue in self.cues], "score_status": self.score_status,
            "tau_source": self.tau_source, "ood_score": self.ood_score, "ood": self.ood,
            "ood_policy": self.ood_policy, "outcome": self.outcome,
            "would_escalate": self.would_escalate,
            "raw": None if score is None else score.to_dict()["raw"],
            "features": None if score is None else score.features(),
        }

    def to_dict(self) -> dict[str, Any]:
        """The `decision` view: the decision object of the CLI's `--json`."""
        return view("decision", self.values())


def unparsed_decision(question_id: str, tau: float, reason: str) -> RouterDecision:
    """The decision for a response that could not be parsed: escalate, and say why."""
    return RouterDecision(
        id=question_id,
        p=None,
        tau=tau,
        escalate=True,
        reasons=(f"unparsed self-critique: {reason}", "no score without a parsed answer: escalate"),
        parse_status=UNPARSED,
        parse_error=reason,
        score_status=UNSCORED,
    )


def non_finite_decision(question_id: str, tau: float, p: float | None,
                        u: float | None) -> RouterDecision:
    """The decision when the router's score is NaN or infinite: escalate, flag it, keep NaN out."""
    return RouterDecision(
        id=question_id,
        p=None,
        tau=tau,
        escalate=True,
        reasons=(f"router score is not finite (p {p}, u {u}): escalate",),
        score_status=NON_FINITE,
    )


def ood_reason(score: float | None, threshold: float | None, policy: str,
               escalated_by_ood: bool) -> str:
    """The reason an unfamiliar answer adds, e.g. "unlike the training answers (OOD 9.1 > 7.4)…";
    `score` None: the OOD score was not a finite number, which is never read as familiar."""
    if score is None or threshold is None:
        head = "the OOD score is not a finite number (doubtful, treated as unfamiliar)"
    else:
        head = f"unlike the router's training answers (OOD score {score:.2f} > {threshold:.2f})"
    if escalated_by_ood:
        return f"{head}: escalate (ood_policy escalate)"
    if policy == "escalate":
        return f"{head}: escalated anyway"
    return f"{head}: flagged, p may be unreliable (ood_policy flag)"


def threshold_reason(p: float, tau: float) -> str:
    """The first reason of a scored decision, e.g. "p 0.41 < τ 0.70: escalate"."""
    digits = 2 if f"{p:.2f}" != f"{tau:.2f}" else 4  # never print "p 0.70 < τ 0.70"
    shown_p, shown_tau = f"{p:.{digits}f}", f"{tau:.{digits}f}"
    if p < tau:
        return f"p {shown_p} < τ {shown_tau}: escalate"
    return f"p {shown_p} ≥ τ {shown_tau}: keep"
