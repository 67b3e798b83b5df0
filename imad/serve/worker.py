"""The app of one `imad serve --workers N` process, built from its import string in the worker.

uvicorn's supervisor starts each worker as a fresh process that imports
`imad.serve.worker:app_from_environment` and calls it; the parent passes the settings, the
router and `--llm` spec in `IMAD_SERVE_WORKER_CONFIG` (the API key itself stays in its own
environment variable). Every worker loads its own router and model and keeps its own slots,
queue and trigger budgets.
"""

from __future__ import annotations

import json
import os
from typing import Any

from imad import tracing
from imad.errors import ConfigError
from imad.serve.server import WORKER_CONFIG_ENV, use_one_torch_thread
from imad.serve.settings import ServeSettings


def app_from_environment() -> Any:
    """The routing app described by `IMAD_SERVE_WORKER_CONFIG` (set by `serve_workers`)."""
    from imad.serve.app import create_app
    from imad.serve.auth import api_key_from_env
    from imad.serve.factory import PipelineFactory
    from imad.serve.logs import configure_logging

    text = os.environ.get(WORKER_CONFIG_ENV)
    if not text:
        raise ConfigError(WORKER_CONFIG_ENV, "is unset: worker processes are started by "
                                             "`imad serve --workers N`")
    config = json.loads(text)
    configure_logging(config["log_level"])
    use_one_torch_thread()
    tracing.configure_from_environment()
    settings = ServeSettings(api_key=api_key_from_env(config["api_key_env"]), **config["settings"])
    factory = PipelineFactory.from_specs(router=config["router"], llm=config["llm"])
    return create_app(settings, factory)
