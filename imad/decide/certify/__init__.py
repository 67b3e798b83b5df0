"""Certify the gate: a threshold τ with a promise on the error of the answers it keeps.

- `ltt`: `certify`, Learn-then-Test with exact binomial p-values in fixed sequence on a fixed
  grid; a `Certificate` or an `Infeasible` answer.
- `certificate`: the two answers, the certificate's canonical hash and its checked reading.
- `curve`: the fixed grid and the labelled risk–coverage curve on it.
- `binomial`: exact tail probabilities and Clopper–Pearson bounds (scipy, loaded when certifying).
- `feasibility`: what a router can promise when it cannot promise α.
- `live`: the anytime-valid check of the promise on labels that arrive after deployment.

Deciding with a certified τ needs none of this: it is a plain `FixedThreshold`.
"""

from __future__ import annotations

from imad.decide.certify.certificate import (
    INFEASIBLE_REASONS,
    Certificate,
    Infeasible,
    LabelSource,
    RouterIdentity,
)
from imad.decide.certify.curve import GRID, RiskCurve, risk_curve
from imad.decide.certify.live import LiveCheck, live_check
from imad.decide.certify.ltt import certify

__all__ = ["GRID", "INFEASIBLE_REASONS", "Certificate", "Infeasible", "LabelSource", "LiveCheck",
           "RiskCurve", "RouterIdentity", "certify", "live_check", "risk_curve"]
