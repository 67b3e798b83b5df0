"""What the scorer says about one answer, before any threshold.

`imad.Router.score` turns a self-critique into a `RouterScore`: the calibrated probability p,
the network's raw score, the uncertainty head, every feature's cue (p minus p with that feature
at its training mean), and how unlike the training rows the answer is. It holds no τ: a policy
(`imad.decide.Policy`) turns a score into a keep/escalate `RouterDecision`. It lives in the
decision package, not beside the network, so deciding needs no torch.

Three kinds of score (`score_status`): "scored"; "unscored" (the self-critique could not be
parsed, so there is nothing to score); "non_finite" (the network or the calibrator gave NaN or
±inf, so p is withheld and the policy escalates). The OOD flag `ood` is None without OOD
statistics or without a score; an OOD score that is not finite is flagged (`ood` True,
`ood_doubtful` True, `ood_score` None), never read as "familiar" (`ood_flag`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, NamedTuple

from imad.decide.schema import PARSE_STATUSES, PARSED, SCORE_STATUSES, SCORED, UNPARSED, UNSCORED
from imad.errors import ConfigError


class Cue(NamedTuple):
    """One feature's contribution: p minus p with this feature at its training mean."""

    feature: str
    value: float
    delta_p: float

    def describe(self) -> str:
        direction = "raises" if self.delta_p > 0 else "lowers"
        value = _format_value(self.value)
        return f"{self.feature}={value} {direction} p by {abs(self.delta_p):.2f}"


@dataclass(frozen=True)
class RouterScore:
    """The scorer's whole output for one answer; `imad.decide.Policy.decide` reads it."""

    id: str
    p: float | None
    """P(answer correct) after the calibrator; None when unscored or not finite."""
    raw: float | None = None
    """The network's own score before the calibrator (what a calibrator is fitted on); for a
    non-finite score, the value that was seen (NaN or ±inf)."""
    uncertainty: float | None = None
    """The auxiliary uncertainty head u; None when unscored."""
    cues: tuple[Cue, ...] = ()
    """Every feature's effect on p, in feature order (a policy picks the ones to report)."""
    ood_score: float | None = None
    """How unlike the training rows the answer is; None without OOD statistics, without a
    score, or when the OOD score itself was not finite."""
    ood_threshold: float | None = None
    """The checkpoint's OOD flag threshold; None without OOD statistics."""
    ood: bool | None = None
    """True above the OOD threshold or when the OOD score is not finite; None when unknown."""
    ood_doubtful: bool = False
    """The OOD score was not a finite number: flagged, and escalated under "escalate"."""
    parse_status: str = PARSED
    parse_error: str | None = None
    score_status: str = SCORED
    feature_values: tuple[tuple[str, float], ...] = ()
    """Every feature's raw value by name, in feature order: what the decision log's `features`
    column holds. Set also for a non-finite score, which has no cues."""

    def __post_init__(self) -> None:
        if self.score_status not in SCORE_STATUSES:
            raise ConfigError("score_status", f"must be one of {', '.join(SCORE_STATUSES)}, got "
                                              f"{self.score_status!r}")
        if self.parse_status not in PARSE_STATUSES:
            raise ConfigError("parse_status", f"must be one of {', '.join(PARSE_STATUSES)}, got "
                                              f"{self.parse_status!r}")
        if (self.parse_status == UNPARSED) != (self.score_status == UNSCORED):
            raise ConfigError("score_status", "an unparsed answer is unscored, and only it")
        if self.score_status != SCORED and self.p is not None:
            raise ConfigError("p", f"must be None for a {self.score_status} answer, got {self.p!r}")
        for name in ("p", "raw"):  # "0.5" was a TypeError in Policy.decide, 1.5 a kept answer
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)
                                      or (math.isfinite(value) and not 0.0 <= value <= 1.0)):
                raise ConfigError(name, f"must be None or a number in [0, 1] (NaN and ±inf stand "
                                  f"for a non-finite score), got {value!r}"[:140])
        if not isinstance(self.cues, (tuple, list)) or not all(isinstance(c, Cue) for c in self.cues):
            raise ConfigError("cues", f"must be a tuple of imad.decide.Cue, got {self.cues!r}"[:120])

    @property
    def scored(self) -> bool:
        """True when p is a number a policy may compare with τ."""
        return self.score_status == SCORED and self.p is not None and math.isfinite(self.p)

    def features(self) -> dict[str, float] | None:
        """Every feature's value by name (all of them, not only the cues a decision reports);
        None when unscored."""
        pairs = self.feature_values or tuple((cue.feature, cue.value) for cue in self.cues)
        return dict(pairs) or None

    def to_dict(self) -> dict[str, Any]:
        """JSON values (a non-finite number becomes null)."""
        return {
            "id": self.id, "p": _finite(self.p), "raw": _finite(self.raw),
            "uncertainty": _finite(self.uncertainty),
            "cues": [cue._asdict() for cue in self.cues], "ood_score": _finite(self.ood_score),
            "ood_threshold": self.ood_threshold, "ood": self.ood, "ood_doubtful": self.ood_doubtful,
            "parse_status": self.parse_status, "parse_error": self.parse_error,
            "score_status": self.score_status,
        }


def unparsed_score(question_id: str, reason: str) -> RouterScore:
    """The score of a self-critique that could not be parsed: none, and why."""
    return RouterScore(id=question_id, p=None, parse_status=UNPARSED, parse_error=reason,
                       score_status=UNSCORED)


def ood_flag(ood_score: float | None, threshold: float | None) -> tuple[float | None, bool | None, bool]:
    """(ood_score, ood, doubtful) for one answer: unknown without statistics, flagged and
    doubtful when the OOD score is not finite (a NaN is never "familiar")."""
    if ood_score is None or threshold is None:
        return None, None, False
    if not math.isfinite(ood_score):
        return None, True, True
    return ood_score, ood_score > threshold, False


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def _format_value(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"
