"""The debate router: the two-head MLP, its config and checkpoint, the shipped
routers and the score it gives an answer. The score, the decision a policy makes of it and the
policy live in the torch-free `imad.decide` (`RouterScore`, `RouterDecision` and `Cue` are
re-exported here).

Importing this package loads no torch, checkpoint or spaCy model: the names that need torch
(`Router`, `RouterConfig`, the network) are imported on first use (PEP 562), so the torch-free
parts below it — the calibrator registry that `imad calibrate --help` lists, the shipped
routers' names — can be imported on their own.
"""

from __future__ import annotations

import importlib
from typing import Any

from imad.decide import Cue, RouterDecision, RouterScore
from imad.router.registry import DEFAULT_ROUTER, available_routers, resolve_checkpoint

_NEEDS_TORCH = {
    "CHECKPOINT_SCHEMA_VERSION": "imad.router.config",
    "RouterConfig": "imad.router.config",
    "RouterNet": "imad.router.model",
    "RouterNetConfig": "imad.router.model",
    "RouterOutput": "imad.router.model",
    "Router": "imad.router.router",
}

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


def __getattr__(name: str) -> Any:
    if name == "DEFAULT_CHECKPOINT":  # resolved on use: the default shipped router's directory
        return resolve_checkpoint(DEFAULT_ROUTER)
    module = _NEEDS_TORCH.get(name)
    if module is None:
        raise AttributeError(f"module 'imad.router' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
