"""The app of one `imad serve --workers N` process, built from its import string in the worker.

uvicorn's supervisor starts each worker as a fresh process that imports
`imad.serve.processes.worker:app_from_environment` and calls it; the parent passes the settings, the
router and `--llm` spec in `IMAD_SERVE_WORKER_CONFIG` (the API key itself stays in its own
environment variable). Every worker loads its own router and model and keeps its own slots,
queue and trigger budgets, and follows the run's reload board (`imad.serve.reload.board`). A
worker whose supervisor dies shuts down as on SIGTERM
(`imad.serve.scoring.lifeline`) and removes the run's temporary metrics directory.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from imad import tracing
from imad.errors import ConfigError
from imad.serve.processes.server import WORKER_CONFIG_ENV
from imad.serve.scoring.lifeline import EXIT_GRACE_S, shut_down_within, watch_parent
from imad.serve.scoring.processes import use_one_torch_thread
from imad.serve.settings import ServeSettings


def app_from_environment() -> Any:
    """The routing app described by `IMAD_SERVE_WORKER_CONFIG` (set by `serve_workers`); once
    it is built, the run's ready file tells the supervisor to stop answering 503 starting."""
    from imad.serve.startup_clock import StartupClock

    clock = StartupClock()
    from imad.serve.app import create_app
    from imad.serve.auth import api_key_from_env
    from imad.serve.factory import PipelineFactory
    from imad.serve.logs import configure_logging
    from imad.serve.reload.board import ReloadBoard, install_sighup

    text = os.environ.get(WORKER_CONFIG_ENV)
    if not text:
        raise ConfigError(WORKER_CONFIG_ENV, "is unset: worker processes are started by "
                                             "`imad serve --workers N`")
    config = json.loads(text)
    configure_logging(config["log_level"])
    use_one_torch_thread()
    tracing.configure_from_environment()
    settings = ServeSettings(api_key=api_key_from_env(config["api_key_env"]), **config["settings"])
    shut_down = shut_down_within(settings.shutdown_timeout_s + EXIT_GRACE_S)

    def on_supervisor_death() -> None:
        if config.get("metrics_dir"):  # the supervisor made it and cannot remove it any more;
            # the files this process writes stay mapped, so its own metrics keep working
            shutil.rmtree(config["metrics_dir"], ignore_errors=True)
        shut_down()

    watch_parent(on_supervisor_death)
    clock.lap("imports_and_checks")
    factory = PipelineFactory.from_specs(router=config["router"], llm=config["llm"])
    clock.lap("router_and_chat_model")
    board = (ReloadBoard(Path(config["reload_board"]), workers=settings.workers)
             if config.get("reload_board") else None)
    app = create_app(settings, factory, router_spec=config["router"], board=board, clock=clock)
    install_sighup(app.state.runner.routers, board)  # uvicorn calls this in the main thread
    if config.get("ready_file"):
        Path(config["ready_file"]).touch()
    return app
