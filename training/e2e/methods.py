"""The methods the end-to-end benchmark compares.

A registry from method name to what runs it: a debate back-end on its own (`imad.debate`), or
the iMAD pipeline (`imad.Pipeline`: self-critique → router → that back-end when p < τ, with the
self-critique as one agent's opening). Selective methods — DOWN and the iMAD variants — keep
some first answers and debate the rest, so their decisions are broken down as the paper does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    """One compared method: its title in the report, its debate back-end, and its kind."""

    title: str
    backend: str
    """A name in `imad.debate.BACKENDS`: the whole method, or iMAD's escalation target."""
    routed: bool = False
    """True for iMAD: the router decides whether `backend` runs."""
    selective: bool = False
    """True when the method keeps some first answers and debates the others."""


E2E_METHODS: dict[str, Method] = {
    "cot": Method("CoT", "cot"),
    "self_consistency": Method("Self-consistency", "self_consistency"),
    "mad": Method("Full MAD (Du et al., all-to-all)", "mad"),
    "down": Method("DOWN", "down", selective=True),
    "imad_acemad": Method("iMAD + AceMAD", "acemad", routed=True, selective=True),
    "imad_svrmad": Method("iMAD + SVR-MAD", "svrmad", routed=True, selective=True),
}
FULL_MAD = "mad"
"""The method the iMAD variants' token share and accuracy are measured against."""
TOKEN_GOAL = 0.40
"""The goal: iMAD uses at most this share of full MAD's tokens, at no loss of accuracy."""
