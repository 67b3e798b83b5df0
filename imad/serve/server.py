"""Running the routing app under uvicorn: in the foreground (`imad serve`) or in a thread.

Shutdown is uvicorn's graceful one: on SIGTERM/SIGINT (or `BackgroundServer.stop`) it stops
accepting connections, lets in-flight requests finish for up to `shutdown_timeout_s`, then runs
the app's shutdown. uvicorn's access log is off: the app logs one JSON line per request itself.
"""

from __future__ import annotations

import importlib.util
import threading
import time
from typing import TYPE_CHECKING, Any

from imad.errors import MissingDependencyError
from imad.serve.settings import ServeSettings

if TYPE_CHECKING:
    import uvicorn


def require_serve_dependencies() -> None:
    """Raise MissingDependencyError (with the install command) unless fastapi and uvicorn exist."""
    for package in ("fastapi", "uvicorn"):
        if importlib.util.find_spec(package) is None:
            raise MissingDependencyError(package, "pip install 'imad[serve]'", "imad serve")


def uvicorn_config(app: Any, settings: ServeSettings, *, host: str, port: int) -> uvicorn.Config:
    import uvicorn

    return uvicorn.Config(app, host=host, port=port, lifespan="on", access_log=False, log_config=None,
                          timeout_graceful_shutdown=settings.shutdown_timeout_s, server_header=False)


def serve(app: Any, settings: ServeSettings, *, host: str, port: int) -> None:
    """Serve until SIGTERM/SIGINT, then shut down gracefully (blocks)."""
    import uvicorn

    uvicorn.Server(uvicorn_config(app, settings, host=host, port=port)).run()


class BackgroundServer:
    """A uvicorn server in a daemon thread, for tests, benchmarks and notebooks.

    `port=0` picks a free port; `base_url` is the OpenAI-style URL (`http://host:port/v1`).
    """

    def __init__(self, app: Any, settings: ServeSettings, *, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        self.server = uvicorn.Server(uvicorn_config(app, settings, host=host, port=port))
        self.host = host
        self.port = port
        self._thread = threading.Thread(target=self.server.run, name="imad-serve-uvicorn", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout_s: float = 30.0) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the uvicorn server thread exited during start-up; see its log")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start within {timeout_s:g} s")
            time.sleep(0.01)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self, timeout_s: float | None = None) -> None:
        """Graceful shutdown: in-flight requests finish (within the settings' shutdown timeout)."""
        self.server.should_exit = True
        self._thread.join(timeout_s)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
