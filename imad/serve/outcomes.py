"""The one outcome each request that reached the pipeline ends in, for the server's metrics.

Every request admitted to a slot is counted in exactly one outcome (issue 20): a kept answer,
an escalation with its reason, a fallback to the self-critique answer, or a request that ended
without an answer (no usable answer, a timeout, a cancelled client, an error). A decision's
outcome is the decision's own (`RouterDecision.outcome`, the schema's `metrics` view), labelled
`kept` or `escalated_<outcome>` for each value the schema declares; the answer's `source` adds
the fallback and no-answer outcomes.
"""

from __future__ import annotations

from imad.decide.schema import FIELD, KEPT
from imad.pipeline import PipelineAnswer

DECISION_OUTCOMES = {outcome: outcome if outcome == KEPT else f"escalated_{outcome}"
                     for outcome in FIELD["outcome"].values}
"""The metrics label of each `RouterDecision.outcome` the schema declares."""
FALLBACK = "fallback"
NO_ANSWER = "no_answer"
TIMED_OUT = "timed_out"
CANCELLED = "cancelled"
FAILED = "failed"

OUTCOMES = (*DECISION_OUTCOMES.values(), FALLBACK, NO_ANSWER, TIMED_OUT, CANCELLED, FAILED)
"""Every value of the `outcome` label, so each is exported (as 0) before it first happens."""


def decision_outcome(answer: PipelineAnswer) -> str:
    """The outcome of a pipeline that returned `answer` (see the module docstring)."""
    if not answer.answered:
        return NO_ANSWER
    if answer.source == "single_agent_fallback":
        return FALLBACK
    return DECISION_OUTCOMES[answer.decision.outcome]
