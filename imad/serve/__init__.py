"""An OpenAI-compatible routing server: the iMAD pipeline behind `/v1/chat/completions`.

`imad serve` runs it; `create_app(settings, factory)` builds the ASGI app for any ASGI server.
Needs the `serve` extra (`pip install 'imad[serve]'`); FastAPI and uvicorn are imported only when
the server is built, so `import imad.serve` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "create_app": "imad.serve.app",
    "ServeSettings": "imad.serve.settings",
    "PipelineFactory": "imad.serve.factory",
    "BackgroundServer": "imad.serve.server",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'imad.serve' has no attribute {name!r}")
    if name in ("create_app", "BackgroundServer"):
        from imad.serve.server import require_serve_dependencies

        require_serve_dependencies()
    return getattr(importlib.import_module(module), name)
