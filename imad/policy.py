"""The decision policy's first piece: a fixed threshold τ, range-checked in one place (SPEC §14).

`check_tau` is the one range check of τ in the runtime: the checkpoint's `threshold.tau`, a
pipeline's `tau=`, `imad ask --tau`, `imad serve --tau` and a model-name suffix all go through
it, so they accept and refuse the same values with the same message. `FixedThreshold` is a τ
together with where it was chosen (`tau_source`), set once where τ is chosen and never
overwritten downstream.

Importable without torch (the server's settings and model names need it before a model loads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from imad.constraints import Constraint, Refused
from imad.errors import ConfigError

FIXED_TAU_SOURCES = ("checkpoint", "request")
"""Where a fixed τ can come from; a trigger budget's τ is the third source, "budget"."""


def check_tau(value: object, field: str = "tau") -> float:
    """`value` as a float τ in [0, 1] (0: never escalate a scored answer, 1: always escalate).

    Refuses booleans, strings, NaN, ±inf and integers too large for a float, with a
    `ConfigError` naming `field` (a CLI passes its flag, e.g. "--tau")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(field, f"must be a number in [0, 1], got {_show(value)}")
    try:
        tau = float(value)
    except OverflowError:
        raise ConfigError(field, f"must be a number in [0, 1], got an integer of "
                                 f"{len(str(abs(value)))} digits") from None
    if not (math.isfinite(tau) and 0.0 <= tau <= 1.0):
        raise ConfigError(field, f"must be a number in [0, 1], got {_show(value)}")
    return tau


class Tau(Constraint):
    """`check_tau` as a constraints-table row, so a config's τ field gives the same message."""

    def admit(self, value: object) -> float:
        try:
            return check_tau(value)
        except ConfigError:
            raise Refused from None

    def parse(self, text: str) -> float:
        try:
            return float(text.strip())
        except ValueError:
            raise Refused from None

    def __str__(self) -> str:
        return "a number in [0, 1]"


@dataclass(frozen=True)
class FixedThreshold:
    """Escalate a scored answer when p < `tau`; `source` says where τ was chosen.

    `FixedThreshold(0.6)` is a caller's own τ (source "request"); a checkpoint's τ is
    `FixedThreshold(tau, source="checkpoint")`."""

    tau: float
    source: str = "request"
    method: str = "set by the caller"

    def __post_init__(self) -> None:
        object.__setattr__(self, "tau", check_tau(self.tau))
        if self.source not in FIXED_TAU_SOURCES:
            raise ConfigError("tau_source", f"must be one of {', '.join(FIXED_TAU_SOURCES)}, got "
                                            f"{_show(self.source)}")


def _show(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and len(str(abs(value))) > 40:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
