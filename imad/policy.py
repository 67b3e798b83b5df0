"""The old home of the policy (before issue 33): `imad.decide` holds it now.

Kept because callers import it (`from imad.policy import FixedThreshold, Policy`, as the
recorded-decisions test of issue 21 does); new code imports `imad.decide`. Torch-free.
"""

from __future__ import annotations

from imad.decide.policy import FixedThreshold, Policy, ThresholdRule
from imad.routing_options import check_tau

__all__ = ["FixedThreshold", "Policy", "ThresholdRule", "check_tau"]
