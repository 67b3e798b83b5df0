"""The one outcome each request that reached the pipeline ends in, for the server's metrics.

Every request admitted to a slot is counted in exactly one outcome (issue 20): a kept answer,
an escalation with its reason, a fallback to the self-critique answer, or a request that ended
without an answer (no usable answer, a timeout, a cancelled client, an error). The outcome is
read from the decision's own fields and the answer's `source`, in this one function, so it can
move to the decision if the decision grows an outcome field.
"""

from __future__ import annotations

from imad.pipeline import PipelineAnswer
from imad.router.decision import NON_FINITE, PARSED

KEPT = "kept"
ESCALATED_BELOW_TAU = "escalated_below_tau"
ESCALATED_UNPARSED = "escalated_unparsed"
ESCALATED_NON_FINITE = "escalated_non_finite"
ESCALATED_OOD = "escalated_ood"
FALLBACK = "fallback"
NO_ANSWER = "no_answer"
TIMED_OUT = "timed_out"
CANCELLED = "cancelled"
FAILED = "failed"

OUTCOMES = (KEPT, ESCALATED_BELOW_TAU, ESCALATED_UNPARSED, ESCALATED_NON_FINITE, ESCALATED_OOD,
            FALLBACK, NO_ANSWER, TIMED_OUT, CANCELLED, FAILED)
"""Every value of the `outcome` label, so each is exported (as 0) before it first happens."""


def decision_outcome(answer: PipelineAnswer) -> str:
    """The outcome of a pipeline that returned `answer` (see the module docstring)."""
    decision = answer.decision
    if answer.source == "none":
        return NO_ANSWER
    if answer.source == "single_agent_fallback":
        return FALLBACK
    if not decision.escalate:
        return KEPT
    if decision.parse_status != PARSED:
        return ESCALATED_UNPARSED
    if decision.score_status == NON_FINITE or decision.p is None:
        return ESCALATED_NON_FINITE
    if decision.p < decision.tau:
        return ESCALATED_BELOW_TAU
    return ESCALATED_OOD  # escalated although p ≥ τ: only the OOD policy does that
