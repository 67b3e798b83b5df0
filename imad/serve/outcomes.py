"""The one outcome each request that reached the pipeline ends in, for the server's metrics.

Every request admitted to a slot is counted in exactly one outcome (issue 20): a kept answer,
an escalation with its reason, a fallback to the self-critique answer, or a request that ended
without an answer (no usable answer, a timeout, a cancelled client, an error). A decision's
outcome is the decision's own (`RouterDecision.outcome`), named here as the metrics label it;
the answer's `source` adds the fallback and no-answer outcomes.
"""

from __future__ import annotations

from imad.pipeline import PipelineAnswer
from imad.router import decision as router_decision

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


DECISION_OUTCOMES = {
    router_decision.KEPT: KEPT,
    router_decision.BELOW_TAU: ESCALATED_BELOW_TAU,
    router_decision.UNPARSED: ESCALATED_UNPARSED,
    router_decision.NON_FINITE: ESCALATED_NON_FINITE,
    router_decision.OOD_ESCALATED: ESCALATED_OOD,
}
"""The metrics label of each `RouterDecision.outcome`."""


def decision_outcome(answer: PipelineAnswer) -> str:
    """The outcome of a pipeline that returned `answer` (see the module docstring)."""
    if answer.source == "none":
        return NO_ANSWER
    if answer.source == "single_agent_fallback":
        return FALLBACK
    return DECISION_OUTCOMES[answer.decision.outcome]
