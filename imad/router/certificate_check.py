"""What a checkpoint's certificate must match on load: the checkpoint's τ and its scorer.

A certificate (`imad calibrate --certify`, `imad.router.certified`) promises something about the
scores of one scorer at one τ. `scorer_hash` names what turns features into p; a checkpoint
whose certificate speaks of another τ or another scorer is a `CheckpointError`, never served.
Kept apart from `imad.router.certified`, which builds certificates from a router, so that
reading a checkpoint needs nothing of the router.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from imad.errors import CheckpointError

if TYPE_CHECKING:
    from imad.router.config import RouterConfig

__all__ = ["check_certificate", "scorer_hash"]


def scorer_hash(config: RouterConfig) -> str:
    """sha256 of what turns features into p: the weights, the scaler, the feature list and the
    calibrator (τ, name and record left out: a new version of the same scorer has the same)."""
    body = {"weights": config.weights_sha256, "features": config.features.hash,
            "scaler": [list(config.scaler.mean), list(config.scaler.scale), config.scaler.kind],
            "calibrator": config.calibrator.to_dict()}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def check_certificate(config: RouterConfig, where: Path | str) -> None:
    """A checkpoint's certificate must speak of its τ and its scorer (module docstring)."""
    certificate = config.record.certificate
    if certificate is None:
        return
    if certificate.tau != config.threshold.tau:
        raise CheckpointError(f"{where}: the certificate is for tau = {certificate.tau:g} but the "
                              f"threshold is {config.threshold.tau:g}; certify again "
                              "(imad calibrate --certify)")
    if certificate.router.scorer != scorer_hash(config):
        raise CheckpointError(f"{where}: the certificate was made for another scorer (weights, "
                              "scaler or calibrator differ); certify again (imad calibrate --certify)")
