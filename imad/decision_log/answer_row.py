"""One decision-log row from one answered question (what `imad serve` and `imad ask` record).

The decision's own fields (p, τ and its source, u, OOD, outcome, reasons) come from the decision;
the row adds what only the caller knows: the completion id, the served model name, the router's
identity, the policy, the tokens by phase, the answers and which was served. Shadow mode records
`would_escalate` (the decision) beside `escalate` (what was served).

`RouterIdentity` names the router a decision came from: its checkpoint name, the version in
that name (`imad-router-v2.1` → "2.1"), a content hash (SHA-256 of its config.json, which holds
the weights' SHA-256, the calibrator and τ, so a recalibrated copy hashes differently) and its
calibrator. No torch is imported here: the router and the answer are read by their attributes.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

_VERSION = re.compile(r"-v(\d+(?:\.\d+)*)$")


@dataclass(frozen=True)
class RouterIdentity:
    """The router behind a decision, as the log and /health name it."""

    name: str
    version: str | None
    hash: str
    calibrator: str


def router_identity(router: Any) -> RouterIdentity:
    """The identity of a loaded `imad.Router` (read from its config, no scoring)."""
    config = router.config.to_dict()
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":"),
                                       allow_nan=True).encode()).hexdigest()
    found = _VERSION.search(router.name)
    return RouterIdentity(name=router.name, version=found.group(1) if found else None, hash=digest,
                          calibrator=router.calibrator.kind)


def answer_row(answer: Any, *, completion_id: str, model: str, identity: RouterIdentity,
               policy_rule: str, shadow: bool = False) -> dict[str, Any]:
    """The log row of a `PipelineAnswer`; `shadow`: the decision was recorded, not served (the
    single answer was), so `escalate` is False and `would_escalate` the decision."""
    decision = answer.decision
    critique = answer.critique
    parsed = critique.response
    debate = answer.debate
    served = "single_agent" if shadow and answer.source == "debate" else answer.source
    return {
        "response_id": completion_id, "served_model": model, "router_name": identity.name,
        "router_version": identity.version, "router_hash": identity.hash,
        "calibrator": identity.calibrator, "policy_rule": policy_rule,
        "tau": decision.tau, "tau_source": decision.tau_source,
        "raw": getattr(decision, "raw", None), "p": decision.p,
        "uncertainty": decision.uncertainty, "ood_score": decision.ood_score, "ood": decision.ood,
        "ood_policy": decision.ood_policy, "outcome": decision.outcome,
        "escalated": decision.escalate and not shadow,
        "would_escalate": decision.escalate if shadow else None, "reasons": list(decision.reasons),
        "features": getattr(decision, "features", None),
        "critique_prompt_tokens": critique.prompt_tokens,
        "critique_completion_tokens": critique.completion_tokens,
        "debate_prompt_tokens": 0 if debate is None else debate.prompt_tokens,
        "debate_completion_tokens": 0 if debate is None else debate.completion_tokens,
        "question": answer.question.text, "error": answer.error,
        "upstream_model": critique.model_id,
        "single_answer": None if parsed is None else parsed.final_answer,
        "debate_answer": None if debate is None or not debate.final_answer else debate.final_answer,
        "served": served, "shadow_debate": False,
        "confidence": None if parsed is None else parsed.confidence_critique,
    }
