"""Reading and writing a router checkpoint directory (SPEC §7). Pickle is never used.

A checkpoint is a directory of three files:

- `model.safetensors`: the network's tensors (float32; BatchNorm counters int64);
- `config.json`: everything that rebuilds the router and says where it came from — checkpoint
  schema version, network hyper-parameters, the ordered feature names with their schema version
  and hash, the scaler's mean and scale, τ and how it was chosen, the weights' sha256, and the
  free-form training record (data summary, loss, seed, metrics, library versions);
- `README.md`: the model card, rendered from config.json (`imad.router.card`).

`read_checkpoint` checks, in this order, and raises `CheckpointError` naming what mismatched:
the files exist; config.json is JSON of this format and schema version; the feature list is
self-consistent and equals the installed `features` schema; the scaler fits the feature count;
the weights file parses (not truncated), matches its recorded sha256, and holds exactly the
tensors, shapes and dtypes the configured network expects.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from imad.errors import CheckpointError, ConfigError
from imad.router.model import RouterNet, RouterNetConfig

CHECKPOINT_FORMAT = "imad-router"
CHECKPOINT_SCHEMA_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
CARD_FILE = "README.md"
RETRAIN_HINT = "retrain and export a router with `python -m training.fit`"
_REQUIRED_KEYS = ("model", "features", "scaler", "threshold", "weights")


@dataclass(frozen=True)
class CheckpointContents:
    """A validated checkpoint: its parsed config.json and its tensors."""

    config: dict[str, Any]
    net_config: RouterNetConfig
    tensors: dict[str, torch.Tensor]


def weights_bytes(net: RouterNet) -> bytes:
    """The safetensors encoding of `net`'s state (deterministic for equal tensors)."""
    tensors = {name: t.detach().cpu().contiguous() for name, t in net.state_dict().items()}
    # One metadata entry only: safetensors writes a multi-key metadata map in random order,
    # which would make the bytes (and the recorded sha256) differ between identical saves.
    return save_safetensors(tensors, metadata={"format": "pt"})


def write_checkpoint(directory: Path, weights: bytes, config: dict[str, Any], card: str) -> None:
    """Write the three files; each lands atomically (temporary file, then rename)."""
    directory.mkdir(parents=True, exist_ok=True)
    _write_atomic(directory / WEIGHTS_FILE, weights)
    text = json.dumps(config, indent=2, ensure_ascii=False, allow_nan=True) + "\n"
    _write_atomic(directory / CONFIG_FILE, text.encode("utf-8"))
    _write_atomic(directory / CARD_FILE, card.encode("utf-8"))


def _write_atomic(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_checkpoint(directory: Path) -> CheckpointContents:
    """Read and validate a checkpoint directory (see the module docstring for the checks)."""
    directory = Path(directory)
    if not directory.is_dir():
        hint = (
            f"; pass the directory that holds it ({directory.parent})"
            if directory.name in (WEIGHTS_FILE, CONFIG_FILE) and directory.exists()
            else f"; {RETRAIN_HINT}"
        )
        raise CheckpointError(f"no router checkpoint directory at {directory}{hint}")
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        if not (directory / name).is_file():
            raise CheckpointError(
                f"router checkpoint {directory} is missing {name}; copy the complete directory "
                f"or {RETRAIN_HINT}"
            )
    config = _read_config(directory / CONFIG_FILE)
    net_config = _check_config(config, directory)
    tensors = _read_weights(directory / WEIGHTS_FILE, config["weights"])
    _check_tensors(tensors, RouterNet(net_config), directory)
    return CheckpointContents(config=config, net_config=net_config, tensors=tensors)


def _read_config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise CheckpointError(f"{path} is not UTF-8 text: {error}") from error
    except json.JSONDecodeError as error:
        raise CheckpointError(
            f"{path} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from error
    if not isinstance(config, dict) or config.get("format") != CHECKPOINT_FORMAT:
        found = config.get("format") if isinstance(config, dict) else type(config).__name__
        raise CheckpointError(
            f"{path} is not an imad router config (format {found!r}, expected "
            f"{CHECKPOINT_FORMAT!r})"
        )
    version = config.get("schema_version")
    if version != CHECKPOINT_SCHEMA_VERSION:
        raise CheckpointError(
            f"{path} has checkpoint schema version {version!r}; this imad reads version "
            f"{CHECKPOINT_SCHEMA_VERSION}: install the imad version that wrote it or "
            f"{RETRAIN_HINT}"
        )
    for key in _REQUIRED_KEYS:
        if not isinstance(config.get(key), dict):
            raise CheckpointError(f"{path} lacks the section {key!r} (or it is not an object)")
    return config


def _check_config(config: dict[str, Any], directory: Path) -> RouterNetConfig:
    where = directory / CONFIG_FILE
    try:
        net_config = RouterNetConfig.from_dict(config["model"])
    except (ConfigError, TypeError) as error:
        raise CheckpointError(f"{where}: invalid model hyper-parameters: {error}") from error
    check_feature_schema(config["features"], net_config.n_features, where)
    scaler = config["scaler"]
    for key in ("mean", "scale"):
        values = np.asarray(scaler.get(key), dtype=np.float64)
        if values.shape != (net_config.n_features,):
            raise CheckpointError(
                f"{where}: scaler {key} has shape {values.shape}, expected "
                f"({net_config.n_features},) — one value per feature"
            )
        if not np.all(np.isfinite(values)) or (key == "scale" and np.any(values <= 0)):
            raise CheckpointError(f"{where}: scaler {key} holds non-finite or non-positive values")
    tau = config["threshold"].get("tau")
    if not isinstance(tau, (int, float)) or not 0.0 <= tau <= 1.0:
        raise CheckpointError(f"{where}: threshold tau must be a number in [0, 1], got {tau!r}")
    return net_config


def check_feature_schema(section: dict[str, Any], n_features: int, where: Path | str) -> None:
    """The checkpoint's feature list must be self-consistent and be one of the schemas the
    installed `features` computes (a v1 checkpoint keeps working with the v1 extractor)."""
    import features  # the runtime's own feature schema; importing it loads no spaCy model
    from features.names import schema_hash

    names = section.get("names")
    version = section.get("schema_version")
    recorded_hash = section.get("hash")
    if not isinstance(names, list) or len(names) != n_features:
        count = len(names) if isinstance(names, list) else "no"
        raise CheckpointError(
            f"{where}: {count} feature names for a network with {n_features} inputs"
        )
    if not isinstance(version, int) or schema_hash(version, names) != recorded_hash:
        raise CheckpointError(
            f"{where}: the feature hash does not match the listed feature names and schema "
            f"version {version!r}: config.json was edited after export; {RETRAIN_HINT}"
        )
    if recorded_hash != features.FEATURE_SCHEMA_HASHES.get(version):
        installed = list(features.FEATURE_NAMES)
        computed = ", ".join(f"v{v} (hash {h[:12]}…)"
                             for v, h in features.FEATURE_SCHEMA_HASHES.items())
        raise CheckpointError(
            f"{where}: the router was trained on feature schema v{version} (hash "
            f"{str(recorded_hash)[:12]}…), but this imad computes feature schemas {computed}: "
            f"{_describe_difference(names, installed)}; {RETRAIN_HINT}"
        )


def _describe_difference(checkpoint: list[str], installed: list[str]) -> str:
    missing = [n for n in installed if n not in checkpoint]
    extra = [n for n in checkpoint if n not in installed]
    if missing or extra:
        return f"features missing from the checkpoint {missing}, unknown to imad {extra}"
    for index, (ours, theirs) in enumerate(zip(checkpoint, installed, strict=False)):
        if ours != theirs:
            return f"same names in another order (column {index}: {ours!r} vs {theirs!r})"
    return "same names and order, different schema version"


def _read_weights(path: Path, weights_section: dict[str, Any]) -> dict[str, torch.Tensor]:
    data = path.read_bytes()
    try:
        tensors = load_safetensors(data)
    except (SafetensorError, ValueError, RuntimeError) as error:
        raise CheckpointError(
            f"{path} is corrupt or truncated ({len(data):,} bytes): {error}; copy the file "
            f"again or {RETRAIN_HINT}"
        ) from error
    recorded = weights_section.get("sha256")
    actual = hashlib.sha256(data).hexdigest()
    if recorded != actual:
        raise CheckpointError(
            f"{path} does not match the sha256 recorded in config.json (recorded "
            f"{str(recorded)[:12]}…, file {actual[:12]}…): the weights were modified or belong "
            "to another checkpoint"
        )
    return tensors


def _check_tensors(tensors: dict[str, torch.Tensor], net: RouterNet, directory: Path) -> None:
    expected = net.state_dict()
    where = directory / WEIGHTS_FILE
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"{where} does not fit the configured network: missing tensors {missing}, "
            f"unexpected tensors {unexpected}"
        )
    for name, reference in expected.items():
        tensor = tensors[name]
        if tuple(tensor.shape) != tuple(reference.shape):
            raise CheckpointError(
                f"{where}: tensor {name!r} has shape {tuple(tensor.shape)}, the network in "
                f"config.json expects {tuple(reference.shape)}"
            )
        if tensor.dtype != reference.dtype:
            raise CheckpointError(
                f"{where}: tensor {name!r} has dtype {tensor.dtype}, expected {reference.dtype}"
            )
