"""New checkpoint versions: where `imad calibrate` writes one, and the result it returns (with τ's
`ThresholdChoice` when τ was chosen).

Both ways of calibrating — choosing τ (`imad.router.threshold`) and fitting p's calibrator
(`imad.router.recalibrate`) — write a new version of a checkpoint (`my-router-v1` →
`my-router-v1.1` beside it, or `--out`), never the original, and reload it to check what was
written. A new version never takes a shipped router's name (`imad-router-v2` →
`imad-router-v2-local.1`) and is never written into the installed package: the new version of
a shipped router goes to the current directory.
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
    tied_short: int = 0
    """Escalations the target allowed that tied scores took away (τ cannot split equal scores)."""


@dataclass(frozen=True)
class CalibrationResult:
    """A new checkpoint version: where it is, the router reloaded from it, and the record written
    into it; `choice` when τ was chosen, `calibrator` when p was recalibrated."""

    checkpoint: Path
    router: Router
    record: dict[str, Any]
    choice: ThresholdChoice | None = None
    calibrator: Calibrator | None = None


def next_version_path(path: Path, where: Path | None = None) -> Path:
    """The first free name in `where` (default: beside `path`) after `path`'s: `…-v1` → `…-v1.1`,
    `…-v1.1` → `…-v1.2` (a name without `-vN` gets `-v1.1`). A shipped router's name is never
    given to another router (it would name that one in /health and in every decision): where
    the next version would take one, the new version is `<name>-local.1`, `-local.2`, …"""
    from imad.router.registry import available_routers

    where = path.parent if where is None else where
    shipped = set(available_routers())
    match = re.fullmatch(r"(?P<stem>.*-v\d+)(?:\.(?P<minor>\d+))?", path.name)
    stem = match.group("stem") if match else f"{path.name}-v1"
    minor = int(match.group("minor") or 0) + 1 if match else 1
    local = re.fullmatch(r"(?P<stem>.*-local)\.(?P<n>\d+)", path.name)
    if local:
        stem, minor = local.group("stem"), int(local.group("n")) + 1
    elif f"{stem}.{minor}" in shipped or path.name in shipped:
        stem, minor = f"{path.name}-local", 1
    while (where / f"{stem}.{minor}").exists() or f"{stem}.{minor}" in shipped:
        minor += 1
    return where / f"{stem}.{minor}"


def default_version_path(source_path: Path) -> Path:
    """Where a new version goes without `--out`: beside its source, or in the current directory
    when the source is a shipped router (never inside the installed package)."""
    return next_version_path(source_path, Path.cwd() if _is_shipped(source_path) else None)


def new_checkpoint_path(source_path: Path, out: str | Path | None, overwrite: bool) -> Path:
    """Where a new version of `source_path` goes: `out`, else `default_version_path`; never the
    source itself, never inside the installed imad package or under a shipped router's name, a
    non-empty directory only with `overwrite`, and somewhere a directory can be made."""
    if out is not None and not str(out).strip():  # `--out "$UNSET"`: the current directory
        raise ConfigError(OUT, "is empty; give the new checkpoint's directory")
    destination = Path(out) if out is not None else default_version_path(source_path)
    if destination.resolve() == source_path.resolve():
        raise ConfigError(OUT, "the new checkpoint must not replace the one it comes from")
    _refuse_shipped_place(destination)
    if destination.exists() and not destination.is_dir():
        raise ConfigError(OUT, f"{destination} is a file, not a directory; choose a directory")
    if destination.exists() and any(destination.iterdir()) and not overwrite:
        raise ConfigError(OUT, f"{destination} exists and is not empty; choose another "
                          "directory or pass --overwrite")
    if not destination.exists():
        _check_creatable(destination)
    return destination


def _is_shipped(path: Path) -> bool:
    from imad.router.registry import shipped_directory

    try:
        return path.resolve().parent == shipped_directory().resolve()
    except CheckpointError:  # no shelf: nothing is shipped
        return False


def _refuse_shipped_place(destination: Path) -> None:
    """A new version inside the installed package (a pip install's site-packages) would be lost
    on upgrade and change what imad ships; one named like a shipped router would pass for it.
    The source checkout's `checkpoints/` is where the shipped routers are made, so it may."""
    from imad.router.registry import CHECKOUT_SHELF, PACKAGE_ROOT, available_routers

    resolved = destination.resolve()
    if resolved.is_relative_to(PACKAGE_ROOT):
        raise ConfigError(OUT, f"{destination} is inside the installed imad package ({PACKAGE_ROOT}); "
                          "write new versions to a directory of yours (without --out: the current "
                          "directory)")
    if resolved.name in available_routers() and resolved.parent != CHECKOUT_SHELF.resolve():
        raise ConfigError(OUT, f"{destination.name!r} is the name of a shipped router, which /health "
                          "and every decision would then show for this one; choose another name "
                          "(without --out the new version never takes a shipped name)")


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


__all__ = ["CalibrationResult", "default_version_path", "new_checkpoint_path", "next_version_path",
           "save_version"]
