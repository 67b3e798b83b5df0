"""`/v1/imad/*`: what an operator asks of the router itself.

`GET /v1/imad/stats`: the router, its OOD policy, and with `--target-trigger-rate` each model
name's trigger budget — τ now, whether the budget set it, the realized trigger rate over its
window (`imad.serve.budgets`) — the decision log's counters, whether the server runs in shadow
mode, and its shadow debates' counters (submitted, run, dropped, failed, changed). Not in
/health, which is open to anyone who can reach the port.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from imad.decide.certify.watch import certificate_state
from imad.decision_log.fleet import fleet_counts
from imad.decision_log.writer import DecisionLog
from imad.serve.logs import log_event
from imad.serve.routes.state import Server

router = APIRouter()


@router.get("/v1/imad/stats")
async def routing_stats(server: Server) -> dict[str, Any]:
    settings, factory, budgets = server.settings, server.factory, server.runner.budgets
    policy = factory.default_policy()
    return {"router": factory.router.name, "tau": factory.router.config.threshold.tau,
            "ood_statistics": factory.router.ood_detector is not None,
            "ood_policy": policy.ood_policy,
            "target_trigger_rate": settings.target_trigger_rate,
            "budget_window": None if budgets is None else settings.budget_window,
            "budgets": {} if budgets is None else budgets.stats(),
            "decision_log": decision_log_stats(server.decision_log,
                                               await run_in_threadpool(fleet_counts, server.decision_log)),
            "shadow": settings.shadow,
            "shadow_debates": None if server.shadow_debates is None else server.shadow_debates.stats(),
            "certificate": served_certificate(server)}


def served_certificate(server: Server) -> dict[str, Any] | None:
    """The serving router's certificate with the live check read from the decision log; the
    first time a process sees the check reject, one warning line gives the evidence."""
    current = server.runner.routers.current
    state = certificate_state(current.factory.router.config.record.certificate,
                              server.settings.decision_log, current.identity.hash)
    live = None if state is None else state["live_check"]
    if live is not None and live["violated"] and state["hash"] not in _SAID_VIOLATED:
        _SAID_VIOLATED.add(state["hash"])
        log_event("certificate_violated", level=logging.WARNING, certificate=state["hash"],
                  evidence=live["evidence"])
    return state


_SAID_VIOLATED: set[str] = set()
"""Hashes of the certificates whose violation this process has logged (one line each)."""


def decision_log_stats(log: DecisionLog | None, fleet: dict[str, Any] | None = None
                       ) -> dict[str, Any] | None:
    """This worker's decision-log counters (rows written, dropped by reason, pruned), and with a
    log in PostgreSQL the whole fleet's (`imad.decision_log.fleet`); None without `--decision-log`."""
    if log is None:
        return None
    stats = log.stats
    return {"path": str(log.path), **({} if fleet is None else {"fleet": fleet}),
            **{event: stats[event] for event in ("recorded", "written", "duplicates", "pruned", "amended")},
            "dropped": dict(sorted(stats.group("dropped").items()))}
