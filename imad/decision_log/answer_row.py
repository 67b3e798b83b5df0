"""One decision-log row from one answered question (what `imad serve` and `imad ask` record).

The row is the decision schema's `log` view (`imad.decide.schema`): the decision's and the
answer's values (`PipelineAnswer.values()`: p, τ, OOD, reasons, tokens by phase, the answers and
which was served) and what only the caller knows: the completion id, the served model name and
back-end, the time, the router's identity and the policy, and the host and process that wrote
the row (which replica, in a fleet sharing one log). Shadow mode records `would_escalate`
(the decision's verdict) beside `escalated` (False: the single answer was served).

`RouterIdentity` names the router a decision came from: its checkpoint name, the version in
that name (`imad-router-v2.1` → "2.1"), a content hash (SHA-256 of its config.json, which holds
the weights' SHA-256, the calibrator and τ, so a recalibrated copy hashes differently), the
weights' SHA-256 alone (the network: what `imad calibrate --log` matches rows by, whatever the
folder is called), its calibrator, and the hash of the certificate its τ was certified under
(`imad calibrate --certify`; None when it is not). No torch is imported here: the router and the answer are
read by their attributes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import time
from dataclasses import dataclass
from typing import Any

from imad.decide.schema import view
from imad.decision_log.encode import sha256_text

_VERSION = re.compile(r"-v(\d+(?:\.\d+)*)$")
HOST = socket.gethostname()
"""This machine's name, which each row carries (with the process id): the replica that wrote it."""


@dataclass(frozen=True)
class RouterIdentity:
    """The router behind a decision, as the log and /health name it."""

    name: str
    version: str | None
    hash: str
    calibrator: str
    weights: str | None = None
    """SHA-256 of the weights file (None for a router never saved: no file to hash)."""
    certificate: str | None = None
    """SHA-256 of the certificate its τ was certified under (None: τ is not certified)."""


def router_identity(router: Any) -> RouterIdentity:
    """The identity of a loaded `imad.Router` (read from its config, no scoring)."""
    config = router.config.to_dict()
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":"),
                                       allow_nan=True).encode()).hexdigest()
    found = _VERSION.search(router.name)
    certificate = router.config.record.certificate
    return RouterIdentity(name=router.name, version=found.group(1) if found else None, hash=digest,
                          calibrator=router.calibrator.kind, weights=router.config.weights_sha256,
                          certificate=None if certificate is None else certificate.hash)


def answer_row(answer: Any, *, completion_id: str, model: str, backend: str,
               identity: RouterIdentity, policy_rule: str,
               now: float | None = None) -> dict[str, Any]:
    """The log row of a `PipelineAnswer`: the schema's `log` view of its values and the
    request's; a shadow decision's `would_escalate` comes with the decision (a shadow debate,
    if any, amends the row later). The question text goes in; the writer
    keeps only its SHA-256 unless the log keeps text."""
    critique = answer.critique
    parsed = critique.response if critique.ok else None
    values = {
        **answer.values(), "id": completion_id, "backend": backend, "served_model": model,
        "time": time.time() if now is None else now, "router_name": identity.name,
        "router_version": identity.version, "router_hash": identity.hash,
        "certificate": identity.certificate, "router_weights": identity.weights,
        "calibrator": identity.calibrator, "policy_rule": policy_rule,
        "question_sha256": sha256_text(answer.question.text), "question": answer.question.text,
        "shadow_debate": False,
        "confidence_initial": None if parsed is None else parsed.confidence_initial,
        "host": HOST, "process": os.getpid(),
    }
    return view("log", values)
