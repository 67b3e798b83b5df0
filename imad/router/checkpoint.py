"""Reading and writing a router checkpoint directory. Pickle is never used.

A checkpoint is a directory of three files:

- `model.safetensors`: the network's tensors (float32; BatchNorm counters int64);
- `config.json`: the `RouterConfig` (`imad.router.config`) — schema version, the imad that wrote
  it, network hyper-parameters, the ordered feature names with their schema version and hash,
  the scaler, τ and how it was chosen, the weights' sha256 — and the training record;
- `README.md`: the model card, rendered from config.json (`imad.router.card`).

`read_checkpoint` checks, in this order, and raises `CheckpointError` naming what is wrong:
the files exist; config.json is small, UTF-8 JSON, not absurdly nested, of this format, of a
schema and imad major version this imad reads; every field has its type, bounds and finite
values (`RouterConfig.from_dict`); the feature list equals the installed `features` schema;
the weights file parses, matches its recorded sha256, and holds exactly the tensors, shapes
and dtypes the configured network expects — computed on the meta device, so nothing is
allocated before the shapes are known to fit — with finite values of sane magnitude.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from imad.atomic_file import write_atomic
from imad.errors import CheckpointError, ConfigError
from imad.jsonio import UntrustedJSONError, read_untrusted_file
from imad.router.config import CHECKPOINT_FORMAT, CHECKPOINT_SCHEMA_VERSION, RouterConfig
from imad.router.model import RouterNet, RouterNetConfig

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
CARD_FILE = "README.md"
RETRAIN_HINT = "retrain and export a router with `python -m training.fit`"
MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""A config.json holds a few kB; a larger file is not one."""
MAX_WEIGHT_MAGNITUDE = 1e6
"""Bound on every stored tensor value: trained weights are O(1) (the shipped ones ≤ 275), and
values near float32's range overflow the forward pass to ±inf and p to NaN."""


@dataclass(frozen=True)
class CheckpointContents:
    """A validated checkpoint: its config and its tensors."""

    config: RouterConfig
    tensors: dict[str, torch.Tensor]

    @property
    def net_config(self) -> RouterNetConfig:
        return self.config.model


def weights_bytes(net: RouterNet) -> bytes:
    """The safetensors encoding of `net`'s state (deterministic for equal tensors)."""
    tensors = {name: t.detach().cpu().contiguous() for name, t in net.state_dict().items()}
    # One metadata entry only: safetensors writes a multi-key metadata map in random order,
    # which would make the bytes (and the recorded sha256) differ between identical saves.
    return save_safetensors(tensors, metadata={"format": "pt"})


def write_checkpoint(directory: Path, weights: bytes, config: dict[str, Any], card: str) -> None:
    """Write the three files; each lands atomically (temporary file, then rename)."""
    directory.mkdir(parents=True, exist_ok=True)
    write_atomic(directory / WEIGHTS_FILE, weights)
    text = json.dumps(config, indent=2, ensure_ascii=False, allow_nan=True) + "\n"
    write_atomic(directory / CONFIG_FILE, text.encode("utf-8"))
    write_atomic(directory / CARD_FILE, card.encode("utf-8"))


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
    where = directory / CONFIG_FILE
    data = _read_config(where)
    try:
        config = RouterConfig.from_dict(data)
    except ConfigError as error:
        raise CheckpointError(f"{where}: invalid {error}") from error
    if config.record.certificate is not None:
        from imad.router.certificate_check import check_certificate

        check_certificate(config, where)
    check_feature_schema(
        {"names": list(config.features.names), "schema_version": config.features.schema_version,
         "hash": config.features.hash},
        config.model.n_features, where,
    )
    tensors = _read_weights(directory / WEIGHTS_FILE, config.weights_sha256)
    _check_tensors(tensors, config.model, directory / WEIGHTS_FILE)
    return CheckpointContents(config=config, tensors=tensors)


def _read_config(path: Path) -> Any:
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise CheckpointError(f"{path} is {size:,} bytes; a router config.json holds a few kB")
    try:  # deep enough that config.py's own, tighter record check names the section
        data = read_untrusted_file(path, max_bytes=MAX_CONFIG_BYTES, max_depth=500, allow_nan=True)
    except UntrustedJSONError as error:
        raise CheckpointError(f"{path} is not valid JSON ({error})") from error
    except OSError as error:
        raise CheckpointError(f"cannot read {path}: {error.strerror or error}") from error
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise CheckpointError(
            f"{path} is not an imad router config (format {found!r}, expected "
            f"{CHECKPOINT_FORMAT!r})"
        )
    check_version(data.get("schema_version"), data.get("imad_version"), path)
    return data


def check_version(schema_version: Any, imad_version: Any, where: Path | str) -> None:
    """Refuse a checkpoint of another schema, or written by a newer major version of imad."""
    from imad import __version__

    if not isinstance(schema_version, int) or isinstance(schema_version, bool):
        raise CheckpointError(f"{where}: schema_version must be an integer, got {schema_version!r}")
    written_by = f" by imad {imad_version}" if isinstance(imad_version, str) else ""
    if schema_version > CHECKPOINT_SCHEMA_VERSION or _major(imad_version) > _major(__version__):
        raise CheckpointError(
            f"{where} was written{written_by} in checkpoint schema {schema_version}, newer than "
            f"this imad {__version__} (schema {CHECKPOINT_SCHEMA_VERSION}) reads: upgrade with "
            "`pip install -U imad`"
        )
    if schema_version != CHECKPOINT_SCHEMA_VERSION:
        raise CheckpointError(
            f"{where} has checkpoint schema version {schema_version}; this imad reads version "
            f"{CHECKPOINT_SCHEMA_VERSION}: install the imad version that wrote it or {RETRAIN_HINT}"
        )


def _major(version: Any) -> int:
    match = re.match(r"\d+", version) if isinstance(version, str) else None
    return int(match.group()) if match else 0


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


def _read_weights(path: Path, recorded: str | None) -> dict[str, torch.Tensor]:
    data = path.read_bytes()
    try:
        tensors = load_safetensors(data)
    except (SafetensorError, ValueError, RuntimeError) as error:
        raise CheckpointError(
            f"{path} is corrupt or truncated ({len(data):,} bytes): {error}; copy the file "
            f"again or {RETRAIN_HINT}"
        ) from error
    actual = hashlib.sha256(data).hexdigest()
    if recorded != actual:
        raise CheckpointError(
            f"{path} does not match the sha256 recorded in config.json (recorded "
            f"{str(recorded)[:12]}…, file {actual[:12]}…): the weights were modified or belong "
            "to another checkpoint"
        )
    return tensors


def expected_tensors(config: RouterNetConfig) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """Name → (shape, dtype) of every tensor of the configured network, allocating nothing."""
    with torch.device("meta"):
        net = RouterNet(config)
    return {name: (tuple(t.shape), t.dtype) for name, t in net.state_dict().items()}


def _check_tensors(tensors: dict[str, torch.Tensor], config: RouterNetConfig, where: Path) -> None:
    expected = expected_tensors(config)
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"{where} does not fit the configured network: missing tensors {missing[:5]}, "
            f"unexpected tensors {unexpected[:5]}"
        )
    for name, (shape, dtype) in expected.items():
        tensor = tensors[name]
        if tuple(tensor.shape) != shape:
            raise CheckpointError(
                f"{where}: tensor {name!r} has shape {tuple(tensor.shape)}, the network in "
                f"config.json expects {shape}"
            )
        if tensor.dtype != dtype:
            raise CheckpointError(f"{where}: tensor {name!r} has dtype {tensor.dtype}, expected {dtype}")
        if not tensor.dtype.is_floating_point:
            continue
        if not bool(torch.isfinite(tensor).all()) or float(tensor.abs().max()) > MAX_WEIGHT_MAGNITUDE:
            raise CheckpointError(f"{where}: tensor {name!r} holds non-finite values or values "
                                  f"beyond ±{MAX_WEIGHT_MAGNITUDE:g}; {RETRAIN_HINT}")
        if name.endswith("running_var") and bool((tensor < 0).any()):
            raise CheckpointError(f"{where}: tensor {name!r} holds negative variances")
