"""Optional parts of imad and the extra that installs each (pyproject.toml).

The core install loads a router and scores answers; the embedded model (`local`), training
(`train`) and the routing server (`serve`, checked by `imad.serve.require_serve_dependencies`)
need their extra.
Using one without it raises `MissingDependencyError` naming the exact `pip install 'imad[…]'`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from imad.errors import MissingDependencyError

EXTRA_MODULES = {
    "local": ("llama_cpp",),
    "train": ("lightning", "datasets", "sklearn", "matplotlib"),
}
"""The modules whose absence means the extra is not installed."""


def require_extra(extra: str, purpose: str, modules: Sequence[str] | None = None) -> None:
    """Raise `MissingDependencyError` unless every module of `extra` can be imported."""
    for module in modules or EXTRA_MODULES[extra]:
        if _missing(module):
            raise MissingDependencyError(module, f"pip install 'imad[{extra}]'", purpose)


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a module set to None in sys.modules, or a broken one
        return True
