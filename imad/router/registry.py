"""The shipped routers, found by name: `Router.load("imad-router-v1.1")`.

The routers live in the top-level `checkpoints/` folder of the source tree. The wheel carries
the same folder as the data package `imad._checkpoints` (see setup.py), so the shipped names
resolve the same way from an installed wheel, an editable install and a plain checkout: the
first of these folders that exists is the shelf of shipped routers.
"""

from __future__ import annotations

from pathlib import Path

from imad.errors import CheckpointError

DEFAULT_ROUTER = "imad-router-v2"
"""The router `Router.load()` loads with no argument (trained on SmolLM2-135M-Instruct, feature
schema v2)."""

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
"""The imad package's own folder (site-packages/imad for a pip user): nothing is written there."""
CHECKOUT_SHELF = PACKAGE_ROOT.parent / "checkpoints"
"""The source checkout's shelf of shipped routers, where they are made."""
_SHELVES = (PACKAGE_ROOT / "_checkpoints", CHECKOUT_SHELF)
_MARKER = "config.json"


def shipped_directory() -> Path:
    """The folder that holds the shipped routers (installed package first, then the checkout)."""
    for shelf in _SHELVES:
        if shelf.is_dir():
            return shelf
    raise CheckpointError(
        f"no shipped routers next to imad (looked in {', '.join(map(str, _SHELVES))}); "
        "reinstall imad or pass the path of a checkpoint directory"
    )


def available_routers() -> list[str]:
    """Names of the routers shipped with this imad, sorted; each loads with `Router.load(name)`."""
    shelf = shipped_directory()
    return sorted(entry.name for entry in shelf.iterdir() if (entry / _MARKER).is_file())


def resolve_checkpoint(name_or_path: str | Path | None = None) -> Path:
    """The checkpoint directory meant by a shipped name, a path, or None (the default router).

    A bare name (no path separator) that names no directory in the working directory must be a
    shipped name; anything else is a path, and `read_checkpoint` reports what is wrong with it.
    """
    if name_or_path is None:
        name_or_path = DEFAULT_ROUTER
    if isinstance(name_or_path, Path) and len(name_or_path.parts) == 1:
        name_or_path = str(name_or_path)  # `Path("imad-router-v1.1")` from a flag means the name
    if isinstance(name_or_path, str) and _looks_like_name(name_or_path):
        if Path(name_or_path).is_dir():  # a folder of that name in the working directory
            return Path(name_or_path)
        names = available_routers()
        if name_or_path not in names:
            raise CheckpointError(
                f"no shipped router named {name_or_path!r}; shipped routers: {', '.join(names)} "
                "(or pass the path of a checkpoint directory)"
            )
        return shipped_directory() / name_or_path
    return Path(name_or_path)


def _looks_like_name(text: str) -> bool:
    return bool(text) and "/" not in text and "\\" not in text and text not in (".", "..")
