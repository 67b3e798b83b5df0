"""A router whose score is NaN although it says "scored" — what a damaged checkpoint (scaler mean
1e308) gave before the loader refused it — to show the policy, the pipeline and the server never
keep an answer on it."""

from __future__ import annotations

import dataclasses
import math

from tests.router.router_helpers import make_router


class NaNRouter:
    """Wraps a real test router; every score's p becomes NaN with `score_status` "scored"."""

    def __init__(self) -> None:
        self.inner = make_router(tau=0.7)
        self.name = "nan-router"

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def score(self, question, response, **kwargs):
        score = self.inner.score(question, response, **kwargs)
        return dataclasses.replace(score, p=math.nan) if score.p is not None else score


def damaged_router():
    """A real router whose network outputs NaN (its bias is NaN): what the server's scoring
    process scores with, since it calls the router's batch scorer rather than `score`."""
    import torch

    router = make_router(tau=0.7)
    with torch.no_grad():
        router.net.bias.fill_(math.nan)
    return router
