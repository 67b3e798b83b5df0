"""A router that says "keep" with a NaN score — what a damaged checkpoint (scaler mean 1e308)
gave before the loader refused it — to show the pipeline and the server never keep on it."""

from __future__ import annotations

import dataclasses
import math

from tests.router.router_helpers import make_router


class NaNRouter:
    """Wraps a real test router; every decision's p becomes NaN and says "keep"."""

    def __init__(self) -> None:
        self.inner = make_router(tau=0.7)
        self.metadata, self.name = self.inner.metadata, "nan-router"

    @property
    def confidence_source(self) -> str:
        return self.inner.confidence_source

    tau = property(lambda self: self.inner.tau)
    tau_method = property(lambda self: self.inner.tau_method)

    def with_threshold(self, tau, how):
        return self

    def decide(self, question, response, **kwargs):
        decision = self.inner.decide(question, response, **kwargs)
        return dataclasses.replace(decision, p=math.nan, escalate=False, reasons=("p nan ≥ τ 0.70: keep",))
