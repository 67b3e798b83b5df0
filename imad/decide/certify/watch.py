"""What a server says about the certificate of the router it serves: the promise in brief
(/health, /v1/imad/stats) and the live check of it, recomputed from the decision log that every
worker shares — the labelled answers this router kept at the certified τ, in the order they were
labelled — so every worker reads the same state, and a restart loses none of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imad.decide.certify.certificate import Certificate
from imad.decide.certify.live import LiveCheck, live_check

__all__ = ["certificate_state", "certificate_summary", "live_check_from_log"]


def certificate_summary(certificate: Certificate | None) -> dict[str, Any] | None:
    """α, δ, τ, n and the hash of a router's certificate (None: its τ is not certified)."""
    if certificate is None:
        return None
    return {"alpha": certificate.alpha, "delta": certificate.delta, "tau": certificate.tau,
            "labelled": certificate.labelled, "hash": certificate.hash}


def live_check_from_log(log: str | Path, certificate: Certificate, router_hash: str) -> LiveCheck:
    """The live check on the log's labelled decisions of the router with config hash
    `router_hash` that kept the single answer at p ≥ τ, in label order."""
    from imad.decision_log.location import open_for_reading

    store = open_for_reading(log)
    try:
        rows = [row for row in store.rows(names=("time", "p", "served", "router_hash"))
                if row["correct"] is not None and row["router_hash"] == router_hash
                and row["served"] != "debate" and row["p"] is not None and row["p"] >= certificate.tau]
    finally:
        store.close()
    rows.sort(key=lambda row: (row["label_time"] or row["time"], row["time"]))
    return live_check([0 if row["correct"] else 1 for row in rows], certificate.alpha,
                      certificate.delta)


def certificate_state(certificate: Certificate | None, log: str | Path | None,
                      router_hash: str) -> dict[str, Any] | None:
    """The summary with the live check's state (null without a decision log to read labels from)."""
    summary = certificate_summary(certificate)
    if summary is None or certificate is None:
        return None
    check = None if log is None else live_check_from_log(log, certificate, router_hash)
    return {**summary, "live_check": None if check is None else
            {**check.to_dict(), "evidence": check.evidence()}}
