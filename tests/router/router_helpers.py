"""Helpers for the router tests: routers with random (seeded) weights, raw-looking features."""

from __future__ import annotations

import numpy as np
import torch

import features
from imad.router import Router, RouterNet, RouterNetConfig
from imad.router.config import FeatureSpec, RouterConfig, Scaler, Threshold


def make_router(seed: int = 0, tau: float = 0.7, width: int = 32, depth: int = 3) -> Router:
    """A router whose every weight and BatchNorm statistic is random, so no path is trivial."""
    torch.manual_seed(seed)
    net = RouterNet(RouterNetConfig(width=width, depth=depth))
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.normal_(0.0, 0.3)
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm1d):
                module.running_mean.normal_(0.0, 0.5)
                module.running_var.uniform_(0.5, 2.0)
    rng = np.random.default_rng(seed)
    config = RouterConfig(
        model=net.config,
        features=FeatureSpec(names=features.FEATURE_NAMES, schema_version=features.FEATURE_SCHEMA_VERSION,
                             hash=features.FEATURE_SCHEMA_HASH),
        scaler=Scaler(mean=tuple(rng.normal(5.0, 2.0, len(features.FEATURE_NAMES))),
                      scale=tuple(rng.uniform(0.5, 3.0, len(features.FEATURE_NAMES)))),
        threshold=Threshold(tau),
        name="test-router",
        record={"seed": seed, "data": {"model_ids": ["unit-test"]}},
    )
    return Router(net, config)


def random_features(n: int, seed: int = 1) -> np.ndarray:
    """Raw-looking feature rows: counts ≥ 0 and a confidence column in [0, 1] (with 0 and 1)."""
    rng = np.random.default_rng(seed)
    matrix = rng.gamma(2.0, 3.0, size=(n, len(features.FEATURE_NAMES)))
    column = features.FEATURE_NAMES.index("conf_initial")
    matrix[:, column] = rng.uniform(0.0, 1.0, n)
    matrix[: min(n, 2), column] = [0.0, 1.0][: min(n, 2)]
    return matrix
