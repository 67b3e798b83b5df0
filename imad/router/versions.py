"""New checkpoint versions: where `imad calibrate` writes one, and the result it returns (with τ's
`ThresholdChoice` when τ was chosen).

Both ways of calibrating — choosing τ (`imad.router.threshold`) and fitting p's calibrator
(`imad.router.recalibrate`) — write a new version of a checkpoint (`imad-router-v1` →
`imad-router-v1.1`, or `--out`), never the original, and reload it to check what was written.
`--out` is checked before any work: a file, a path under a file, or a place where no directory
can be made (`/proc`) is a `ConfigError` naming the flag; a write that fails later is a
`CheckpointError`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imad.errors import CheckpointError, ConfigError

if TYPE_CHECKING:
    from imad.router.calibrators import Calibrator
    from imad.router.config import RouterConfig
    from imad.router.router import Router

OUT = "out (--out)"


@dataclass(frozen=True)
class ThresholdChoice:
    """τ and what it does on the validation answers."""

    tau: float
    target_rate: float
    achieved_rate: float
    """Share of all validation questions escalated at τ (unparsed ones included)."""
    escalated: int
    questions: int
    unparsed: int
    kept_accuracy: float | None
    """Accuracy of the validation answers kept at τ (None when none is kept)."""


@dataclass(frozen=True)
class CalibrationResult:
    """A new checkpoint version: where it is, the router reloaded from it, and the record written
    into it; `choice` when τ was chosen, `calibrator` when p was recalibrated."""

    checkpoint: Path
    router: Router
    record: dict[str, Any]
    choice: ThresholdChoice | None = None
    calibrator: Calibrator | None = None


def next_version_path(path: Path) -> Path:
    """`…-v1` → `…-v1.1`, `…-v1.1` → `…-v1.2` (a name without `-vN` gets `-v1.1`); the first
    such directory that does not exist yet."""
    match = re.fullmatch(r"(?P<stem>.*-v\d+)(?:\.(?P<minor>\d+))?", path.name)
    stem = match.group("stem") if match else f"{path.name}-v1"
    minor = int(match.group("minor") or 0) + 1 if match else 1
    while path.with_name(f"{stem}.{minor}").exists():
        minor += 1
    return path.with_name(f"{stem}.{minor}")


def new_checkpoint_path(source_path: Path, out: str | Path | None, overwrite: bool) -> Path:
    """Where a new version of `source_path` goes: `out`, else the next version; never the source
    itself, a non-empty directory only with `overwrite`, and somewhere a directory can be made."""
    if out is not None and not str(out).strip():  # `--out "$UNSET"`: the current directory
        raise ConfigError(OUT, "is empty; give the new checkpoint's directory")
    destination = Path(out) if out is not None else next_version_path(source_path)
    if destination.resolve() == source_path.resolve():
        raise ConfigError(OUT, "the new checkpoint must not replace the one it comes from")
    if destination.exists() and not destination.is_dir():
        raise ConfigError(OUT, f"{destination} is a file, not a directory; choose a directory")
    if destination.exists() and any(destination.iterdir()) and not overwrite:
        raise ConfigError(OUT, f"{destination} exists and is not empty; choose another "
                          "directory or pass --overwrite")
    if not destination.exists():
        _check_creatable(destination)
    return destination


def _check_creatable(destination: Path) -> None:
    """Refuse a path under a file, or where the nearest existing folder takes no new directory
    (probed by making and removing one: permissions alone do not say it for /proc)."""
    ancestor = destination.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(OUT, f"{destination} lies under {ancestor}, which is a file")
    try:
        probe = tempfile.mkdtemp(dir=ancestor, prefix=".imad-out-")
    except OSError as error:
        raise ConfigError(OUT, f"cannot make a directory in {ancestor} "
                          f"({error.strerror or error}); choose another place") from None
    shutil.rmtree(probe, ignore_errors=True)


def save_version(router: Router, config: RouterConfig, destination: Path,
                 written: Callable[[Router], bool], what: str) -> Router:
    """Save `router` with `config` (renamed after `destination`) and reload it; `written(reloaded)`
    says whether it holds what was meant (`what`, for the error)."""
    from imad.router.router import Router

    try:
        # resolved: `--out .` names the router after the folder, not ""
        router.with_config(config.renamed(destination.resolve().name)).save(destination)
    except OSError as error:
        raise CheckpointError(f"cannot write the new checkpoint to {destination}: "
                              f"{error.strerror or error}") from None
    reloaded = Router.load(destination)
    if not written(reloaded):
        raise CheckpointError(f"{destination} was written with another {what} than was chosen")
    return reloaded


__all__ = ["CalibrationResult", "new_checkpoint_path", "next_version_path", "save_version"]
