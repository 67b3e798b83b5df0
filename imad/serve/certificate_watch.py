"""The live check of the serving router's certificate, cached per certificate, and what a server
does when it rejects (`imad serve --on-violation flag|escalate-all`).

The check is recomputed from the decision log (`imad.decide.certify.watch.certificate_state`),
which every worker of a server shares, so every worker converges on the same state. Reading the
log is never done per request: the state is cached by certificate hash, computed once when a
request first meets the certificate (a new router after a hot reload has a new certificate, so
its state starts afresh), then refreshed in a thread at most every `REFRESH_S` seconds, and also
whenever `/v1/imad/stats` or `/metrics` recompute it. So the state a request reads is at most
`REFRESH_S` seconds plus one read of the log old.

Under "flag" a violated certificate is reported (/v1/imad/stats, /metrics, one warning line) and
answers are decided as usual. Under "escalate-all" the server also stops keeping answers while
the cached state says violated: every decision escalates (in shadow mode: would escalate) with a
reason naming the certificate (`imad.decide.Policy.escalate_all`), until a router with another
certificate is loaded.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

from imad.decide.certify.certificate import Certificate
from imad.decide.certify.watch import certificate_state
from imad.errors import ImadError
from imad.serve.logs import log_event
from imad.serve.settings import ESCALATE_ALL, FLAG

REFRESH_S = 10.0
"""The most seconds a cached live check goes without a refresh while requests come."""


class CertificateWatch:
    """The cached live check of each certificate a server serves, by certificate hash."""

    def __init__(self, log: str | None, on_violation: str = FLAG, refresh_s: float = REFRESH_S) -> None:
        self.log = log
        self.on_violation = on_violation
        self.refresh_s = refresh_s
        self._states: dict[str, dict[str, Any] | None] = {}
        self._checked: dict[str, float] = {}
        self._refreshing: set[str] = set()
        self._lock = threading.Lock()

    def state(self, certificate: Certificate | None, router_hash: str) -> dict[str, Any] | None:
        """The certificate's summary with its live check, read from the log now (and cached)."""
        state = certificate_state(certificate, self.log, router_hash)
        if certificate is not None:
            with self._lock:
                self._states[certificate.hash] = state
                self._checked[certificate.hash] = time.monotonic()
        return state

    async def escalate_all(self, certificate: Certificate | None, router_hash: str) -> str | None:
        """The reason every answer escalates, under "escalate-all" while the cached check of
        `certificate` rejects; None otherwise. The first request to meet a certificate waits for
        one read of the log (in a thread); later ones read the cache and start a refresh when
        it is `refresh_s` old."""
        if self.on_violation != ESCALATE_ALL or certificate is None or self.log is None:
            return None
        key = certificate.hash
        with self._lock:
            known, checked = key in self._states, self._checked.get(key, 0.0)
            due = known and time.monotonic() - checked >= self.refresh_s and key not in self._refreshing
            if due:
                self._refreshing.add(key)
        if not known:
            await asyncio.to_thread(self._refresh, certificate, router_hash)
        elif due:
            asyncio.get_running_loop().run_in_executor(None, self._refresh, certificate, router_hash)
        with self._lock:
            state = self._states.get(key)
        live = None if state is None else state.get("live_check")
        if not live or not live["violated"]:
            return None
        return (f"certificate {key[:12]} is violated ({live['evidence']}): every answer escalates "
                f"(--on-violation escalate-all) until a router with a new certificate is loaded")

    def _refresh(self, certificate: Certificate, router_hash: str) -> None:
        """`state`, off the request path; a log that cannot be read keeps the last state."""
        try:
            self.state(certificate, router_hash)
        except (ImadError, OSError) as error:
            log_event("certificate_check_failed", level=logging.WARNING, certificate=certificate.hash,
                      error=str(error))
            with self._lock:
                self._states.setdefault(certificate.hash, None)
                self._checked[certificate.hash] = time.monotonic()
        finally:
            with self._lock:
                self._refreshing.discard(certificate.hash)
