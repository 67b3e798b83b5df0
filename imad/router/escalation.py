"""What a new router version would do to the traffic it was made on, and when to refuse it.

`imad calibrate` writes a new version (a τ, or a calibrator that moves p) from some answers:
corpus files or a decision log's decisions. Before it is written, its escalation rate on those
same answers at its τ is measured (`escalation_at`), printed, and recorded in the version:
after a reload the server escalates that share of the same traffic. A version that would
escalate, or keep, at least `EXTREME_SHARE` of it is refused unless the caller allows it
(`--allow-extreme-rate`): on traffic where the router has no signal, the labels' base rate
gives every answer the same p, and the checkpoint's τ then keeps all or debates all, which
looks like a success from the outside. So is a target trigger rate that tied scores cannot
reach: τ cannot split equal scores, and a silent 0% against a target of 20% is no calibration.

The refusal says what to do: label more answers, certify the router on the labels (`imad
calibrate --certify`), or keep serving the old router.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from imad.errors import ExtremeRateError

EXTREME_SHARE = 0.95
"""A version that escalates, or keeps, this share of its traffic or more is refused by default."""
TIE_SHORTFALL = 0.05
"""A target trigger rate missed by more than this because scores tie is refused by default."""
ALLOW_FLAG = "--allow-extreme-rate"
WHAT_TO_DO = ("label more answers (imad log label, POST /v1/imad/feedback) and calibrate again, "
              "check whether the router ranks your answers at all with `imad calibrate --certify`, "
              "or keep serving the old router")


@dataclass(frozen=True)
class EscalationRate:
    """The share of some answers a router escalates at τ (unparsed ones always escalate)."""

    tau: float
    escalated: int
    questions: int
    traffic: str
    """What the answers are, in words ("logged decisions", "corpus answers")."""

    @property
    def rate(self) -> float:
        return self.escalated / self.questions if self.questions else 0.0

    @property
    def extreme(self) -> bool:
        """Escalates or keeps at least `EXTREME_SHARE` of the answers."""
        return self.questions > 0 and max(self.rate, 1.0 - self.rate) >= EXTREME_SHARE

    def describe(self) -> str:
        return (f"{self.rate:.4f} ({self.escalated}/{self.questions} {self.traffic} escalated at "
                f"tau {self.tau:.6g})")

    def to_dict(self) -> dict[str, float | int | str]:
        return {"tau": self.tau, "rate": self.rate, "escalated": self.escalated,
                "questions": self.questions, "traffic": self.traffic}


def escalation_at(p: np.ndarray, tau: float, unparsed: int, traffic: str) -> EscalationRate:
    """The escalation rate of scores `p` at `tau` (p < τ escalates), `unparsed` answers escalating."""
    scores = np.asarray(p, dtype=np.float64).reshape(-1)
    escalated = int(np.sum(scores < tau)) + unparsed
    return EscalationRate(float(tau), escalated, scores.size + unparsed, traffic)


def spread_of(p: np.ndarray) -> str:
    """How p is spread, in words: "every p is 0.292" when they tie, else their range."""
    scores = np.asarray(p, dtype=np.float64).reshape(-1)
    if scores.size == 0:
        return "no scored answer"
    if np.ptp(scores) == 0.0:
        return f"every p is {scores[0]:.4g}: the router tells none of these answers apart"
    return f"p from {scores.min():.4g} to {scores.max():.4g}"


def refuse_extreme(rate: EscalationRate, p: np.ndarray, *, allow: bool, why: str = "") -> None:
    """`ExtremeRateError` for a version that escalates or keeps ≥ `EXTREME_SHARE` of its traffic,
    unless `allow`; `why` says how τ came to be where it is."""
    if allow or not rate.extreme:
        return
    verb = "escalate" if rate.rate >= 0.5 else "keep"
    share = rate.escalated if verb == "escalate" else rate.questions - rate.escalated
    scores = np.asarray(p, dtype=np.float64).reshape(-1)
    ranks = ("" if scores.size == 0 or np.ptp(scores) == 0.0 else
             f". As p still tells these answers apart, τ can be chosen for a trigger rate instead: "
             f"write this version with {ALLOW_FLAG}, then run `imad calibrate "
             "--target-trigger-rate R --router <the new version>` on the same answers")
    raise ExtremeRateError(
        f"the new version would {verb} {share}/{rate.questions} ({share / rate.questions:.1%}) of "
        f"the {rate.traffic} at tau {rate.tau:.6g} ({spread_of(p)}{why}); it was not written. "
        f"{WHAT_TO_DO[0].upper()}{WHAT_TO_DO[1:]}; pass {ALLOW_FLAG} to write it anyway{ranks}")


def refuse_tied_target(target_rate: float, achieved_rate: float, tied_short: int, questions: int,
                       p: np.ndarray, *, allow: bool) -> None:
    """`ExtremeRateError` when tied scores made the rate reached fall short of the target by more
    than `TIE_SHORTFALL` (`tied_short`: escalations the ties took away), unless `allow`."""
    if allow or not questions or tied_short / questions <= TIE_SHORTFALL:
        return
    raise ExtremeRateError(
        f"the target trigger rate {target_rate:.4f} cannot be met: tied scores allow "
        f"{achieved_rate:.4f} at most without going over ({spread_of(p)}), so τ was not moved. "
        f"{WHAT_TO_DO[0].upper()}{WHAT_TO_DO[1:]}; pass {ALLOW_FLAG} to write the version that "
        f"escalates {achieved_rate:.4f} anyway")


__all__ = ["ALLOW_FLAG", "EXTREME_SHARE", "TIE_SHORTFALL", "EscalationRate", "escalation_at",
           "refuse_extreme", "refuse_tied_target", "spread_of"]
