"""The debate router (SPEC §5, §7, §14): the two-head MLP, its config and checkpoint, the shipped
routers and the score it gives an answer. Importing this package loads torch but no checkpoint
and no spaCy model. The score, the decision a policy makes of it and the policy live in the
torch-free `imad.decide` (`RouterScore`, `RouterDecision` and `Cue` are re-exported here)."""

from __future__ import annotations

from pathlib import Path

from imad.decide import Cue, RouterDecision, RouterScore
from imad.router.config import CHECKPOINT_SCHEMA_VERSION, RouterConfig
from imad.router.model import RouterNet, RouterNetConfig, RouterOutput
from imad.router.registry import DEFAULT_ROUTER, available_routers, resolve_checkpoint
from imad.router.router import Router

__all__ = [
    "CHECKPOINT_SCHEMA_VERSION",
    "DEFAULT_CHECKPOINT",
    "DEFAULT_ROUTER",
    "Cue",
    "Router",
    "RouterConfig",
    "RouterDecision",
    "RouterNet",
    "RouterNetConfig",
    "RouterOutput",
    "RouterScore",
    "available_routers",
]


def __getattr__(name: str) -> Path:
    # Resolved on use, not at import: the directory of the default shipped router.
    if name == "DEFAULT_CHECKPOINT":
        return resolve_checkpoint(DEFAULT_ROUTER)
    raise AttributeError(f"module 'imad.router' has no attribute {name!r}")
