"""`GET /v1/imad/stats`: what an operator asks of the router itself.

The router, the τ and OOD policy a request without a τ suffix gets
(`--tau`, else the checkpoint's), and with `--target-trigger-rate` each model
name's trigger budget — τ now, whether the budget set it, the realized trigger rate over its
window (`imad.serve.budgets`) — the decision log's counters, whether the server runs in shadow
mode, its shadow debates' counters (submitted, run, dropped, failed, changed, abandoned), and
the serving router's certificate with its live check.
Under `--workers N` the counters are every worker's together (summed from the files `/metrics`
sums), so any worker gives the same numbers; the router, τ and budgets are those of the worker
that answers (each keeps its own budgets). Not in /health, which is open to anyone who can
reach the port.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from imad.decide import FixedThreshold
from imad.decision_log.fleet import fleet_counts
from imad.decision_log.writer import DecisionLog
from imad.serve.logs import log_event
from imad.serve.metrics import DECISION_LOG_ROWS, ServerMetrics
from imad.serve.routes.state import Server

router = APIRouter()


@router.get("/v1/imad/stats")
async def routing_stats(server: Server) -> dict[str, Any]:
    settings, factory, budgets = server.settings, server.factory, server.runner.budgets
    policy = factory.default_policy(settings.default_tau)
    tau = policy.rule.tau if isinstance(policy.rule, FixedThreshold) else None
    return {"router": factory.router.name, "tau": tau,
            "ood_statistics": factory.router.ood_detector is not None,
            "ood_policy": policy.ood_policy,
            "target_trigger_rate": settings.target_trigger_rate,
            "budget_window": None if budgets is None else settings.budget_window,
            "budgets": {} if budgets is None else budgets.stats(),
            "decision_log": decision_log_stats(server.decision_log, server.metrics,
                                               await run_in_threadpool(fleet_counts, server.decision_log)),
            "shadow": settings.shadow,
            "shadow_debates": None if server.shadow_debates is None else server.shadow_debates.stats(),
            "certificate": served_certificate(server)}


def served_certificate(server: Server) -> dict[str, Any] | None:
    """The serving router's certificate with the live check read from the decision log; the
    first time a process sees the check reject, one warning line gives the evidence."""
    current = server.runner.routers.current
    state = server.runner.certificates.state(current.factory.router.config.record.certificate,
                                             current.identity.hash)
    live = None if state is None else state["live_check"]
    if live is not None and live["violated"] and state["hash"] not in _SAID_VIOLATED:
        _SAID_VIOLATED.add(state["hash"])
        log_event("certificate_violated", level=logging.WARNING, certificate=state["hash"],
                  evidence=live["evidence"])
    return state


_SAID_VIOLATED: set[str] = set()
"""Hashes of the certificates whose violation this process has logged (one line each)."""


def decision_log_stats(log: DecisionLog | None, metrics: ServerMetrics,
                       fleet: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The decision-log counters (rows written, dropped by reason, pruned) of every worker of
    this server together, and with a log in PostgreSQL the whole fleet's rows
    (`imad.decision_log.fleet`); None without `--decision-log`."""
    if log is None:
        return None
    stats = metrics.all_workers_counts(log.stats, DECISION_LOG_ROWS)
    return {"path": str(log.path), **({} if fleet is None else {"fleet": fleet}),
            **{event: stats[event] for event in ("recorded", "written", "duplicates", "pruned", "amended")},
            "dropped": dict(sorted(stats.group("dropped").items()))}
