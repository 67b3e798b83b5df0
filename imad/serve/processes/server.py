"""Running the routing app under uvicorn: in the foreground (`imad serve`), as N worker
processes (`--workers`, uvicorn's own supervisor) or in a thread.

The port is bound here before anything else starts, so a port in use or an unresolvable host is
one `error:` line (ConfigError naming --port / --host) and no `server_ready` is ever logged.

Shutdown is uvicorn's graceful one: on SIGTERM/SIGINT (or `BackgroundServer.stop`) it stops
accepting connections, lets in-flight requests finish for up to `shutdown_timeout_s`, then runs
the app's shutdown. uvicorn's access log is off: the app logs one JSON line per request itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imad.errors import ConfigError
from imad.serve.settings import ServeSettings

if TYPE_CHECKING:
    import uvicorn

WORKER_CONFIG_ENV = "IMAD_SERVE_WORKER_CONFIG"
"""What each worker process builds its app from (JSON: settings, router, llm, log level)."""


def uvicorn_config(app: Any, settings: ServeSettings, *, host: str = "127.0.0.1", port: int = 0,
                   **options: Any) -> uvicorn.Config:
    import uvicorn

    from imad.serve.processes.http_protocol import JsonErrorH11Protocol  # malformed HTTP: a JSON 400 too

    return uvicorn.Config(app, host=host, port=port, lifespan="on", access_log=False, log_config=None,
                          timeout_graceful_shutdown=settings.shutdown_timeout_s, server_header=False,
                          http=JsonErrorH11Protocol, **options)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port, or ConfigError naming the flag that cannot work.
    Until the app is ready, `imad.serve.processes.starting` answers its connections with 503."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as error:
        raise ConfigError("--host", f"cannot resolve {host!r}: {error}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as error:
        sock.close()
        raise ConfigError("--port", f"cannot listen on {host}:{port}: {error.strerror or error}; "
                                    "pick a free --port or stop what holds it") from None
    sock.set_inheritable(True)
    return sock




def serve(app: Any, settings: ServeSettings, *, sock: socket.socket) -> None:
    """Serve on `sock` until SIGTERM/SIGINT, then shut down gracefully (blocks); SIGHUP
    reloads the router (`imad.serve.reload.board`)."""
    import uvicorn

    from imad.serve.reload.board import install_sighup
    from imad.serve.scoring.processes import use_one_torch_thread  # torch: not before serving

    use_one_torch_thread()
    install_sighup(app.state.runner.routers, None)
    uvicorn.Server(uvicorn_config(app, settings)).run(sockets=[sock])


def serve_workers(sock: socket.socket, settings: ServeSettings, *, router: str | None, llm: str,
                  api_key_env: str | None, log_level: str = "info") -> None:
    """Serve with `settings.workers` processes under uvicorn's supervisor (blocks).

    Each worker builds its own app from the import string `imad.serve.processes.worker:app_from_environment`,
    so router, model, slots, queue and budgets are per process. Reloads reach every worker
    through the run's reload board, in a temporary directory of this run; SIGHUP to this
    process writes a reload of --router on it (`ReloadingSupervisor`). Metrics are summed over the
    workers through prometheus_client's multiprocess mode: in a new temporary directory of
    this run, unless PROMETHEUS_MULTIPROC_DIR names one (checked and emptied by `imad serve`,
    `imad.serve.metrics_files.prepare_multiprocess_dir`). Workers end with this process
    (`imad.serve.scoring.lifeline`); the last to go removes a temporary directory it leaves behind.
    """
    from imad.serve.metrics_files import MULTIPROCESS_ENV
    from imad.serve.processes.starting import StartingResponder
    from imad.serve.reload.board import BOARD_FILE, ReloadBoard

    with contextlib.ExitStack() as stack:
        owned = None
        if not os.environ.get(MULTIPROCESS_ENV):
            owned = stack.enter_context(tempfile.TemporaryDirectory(prefix="imad-metrics-"))
            os.environ[MULTIPROCESS_ENV] = owned
        run_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="imad-reload-")))
        board, ready_file = run_dir / BOARD_FILE, run_dir / "worker-ready"
        worker_settings = {key: value for key, value in asdict(settings).items() if key != "api_key"}
        os.environ[WORKER_CONFIG_ENV] = json.dumps({
            "settings": worker_settings, "router": router, "llm": llm, "api_key_env": api_key_env,
            "log_level": log_level, "metrics_dir": owned, "reload_board": str(board),
            "ready_file": str(ready_file)})
        config = uvicorn_config("imad.serve.processes.worker:app_from_environment", settings, factory=True,
                                workers=settings.workers)
        starting = StartingResponder(sock, ready=ready_file.exists).start()  # until a worker is ready
        stack.callback(starting.stop)
        reloading_supervisor(config, sock, ReloadBoard(board), router).run()


def reloading_supervisor(config: uvicorn.Config, sock: socket.socket, board: Any,
                         router: str | None) -> Any:
    """uvicorn's supervisor, but SIGHUP reloads the router instead of restarting the workers.

    uvicorn (0.55) answers SIGHUP with `restart_all`: new workers with the start-up router and
    empty trigger budgets. Here SIGHUP writes a reload of the router in service (the board's
    latest record, else `router`, the --router) on the run's reload board, which every worker
    follows (`imad.serve.reload.board`); SIGTERM and SIGINT are uvicorn's."""
    from uvicorn.supervisors import Multiprocess

    from imad.serve.logs import log_event

    class ReloadingSupervisor(Multiprocess):
        def handle_hup(self) -> None:
            latest = board.read()  # the router in service: the last reload's, else --router
            spec = router if latest is None or latest.get("router") is None else latest["router"]
            generation = board.publish(spec)
            log_event("router_reload_requested", why="SIGHUP", router=spec, generation=generation)

    return ReloadingSupervisor(config, sockets=[sock])


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
