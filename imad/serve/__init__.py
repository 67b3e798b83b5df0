"""An OpenAI-compatible routing server: the iMAD pipeline behind `/v1/chat/completions`.

`imad serve` runs it; `create_app(settings, factory)` builds the ASGI app for any ASGI server.
Needs the `serve` extra (`pip install 'imad[serve]'`); FastAPI and uvicorn are imported only when
the server is built, so `import imad.serve` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from imad.extras import require_extra

_EXPORTS = {
    "create_app": "imad.serve.app",
    "ServeSettings": "imad.serve.settings",
    "PipelineFactory": "imad.serve.factory",
    "BackgroundServer": "imad.serve.processes.server",
}

__all__ = list(_EXPORTS)


def require_serve_dependencies() -> None:
    """Raise MissingDependencyError (with the install command) unless fastapi and uvicorn exist."""
    require_extra("serve", "imad serve", ("fastapi", "uvicorn"))


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'imad.serve' has no attribute {name!r}")
    if name in ("create_app", "BackgroundServer"):
        require_serve_dependencies()
    return getattr(importlib.import_module(module), name)
