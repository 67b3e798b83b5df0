"""Which network scored a logged decision: what `imad calibrate --log` matches rows by.

A row's raw score is the network's (weights, scaler, features); its p is that score through the
logging router's calibrator. A copy of a router that changes only τ, the calibrator or the
folder's name scores with the same network, and a different network may sit in a folder of the
same name. So a row belongs to a router when the SHA-256 of the weights it records
(`router_weights`) equals the router's; a row without it (a log written before the column
existed) falls back to the router's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCORER_COLUMNS = ("router_name", "router_weights")
"""The columns `scorer_of` reads."""


@dataclass(frozen=True, order=True)
class Scorer:
    """The router a logged decision names: its name and the SHA-256 of its weights (None when
    the row does not record it)."""

    name: str | None
    weights: str | None

    def is_network(self, name: str, weights: str | None) -> bool:
        """Whether this row was scored by the network of a router called `name` whose weights
        hash to `weights` (by the weights when both are known, else by the name)."""
        if self.weights is not None and weights is not None:
            return self.weights == weights
        return self.name == name

    def describe(self) -> str:
        named = "(no router name)" if self.name is None else self.name
        return named if self.weights is None else f"{named} (weights {self.weights[:12]}…)"


def scorer_of(row: Mapping[str, Any]) -> Scorer:
    """The scorer a row read with `SCORER_COLUMNS` names."""
    name, weights = row.get("router_name"), row.get("router_weights")
    return Scorer(None if name is None else str(name), None if weights is None else str(weights))


__all__ = ["SCORER_COLUMNS", "Scorer", "scorer_of"]
