"""Fixtures of the routing-server tests: a real uvicorn server on loopback, the real openai SDK."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")

from imad.serve import BackgroundServer, PipelineFactory, ServeSettings, create_app  # noqa: E402
from tests.support.serving import echo_factory  # noqa: E402

API_KEY = "test-key-0123456789"


@pytest.fixture
def start_server() -> Iterator[Callable[..., BackgroundServer]]:
    """Start a server with the given settings and factory (default: the echo model); stopped after.

    It scores in a thread of the server unless `scoring_processes` > 0: a scoring process takes
    seconds to start, so only the tests about them (the load test, test_scoring_process.py, the
    CLI's real `imad serve` processes) pay for them."""
    servers: list[BackgroundServer] = []

    def start(settings: ServeSettings | None = None, factory: PipelineFactory | None = None, *,
              scoring_processes: int = 0) -> BackgroundServer:
        settings = replace(settings or ServeSettings(api_key=API_KEY), scoring_processes=scoring_processes)
        server = BackgroundServer(create_app(settings, factory or echo_factory()), settings).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop(timeout_s=15)


@pytest.fixture
def client_for() -> Callable[..., openai.OpenAI]:
    """An openai SDK client for a server; no SDK retries, so every status is seen as sent."""

    def make(server: BackgroundServer, api_key: str = API_KEY, timeout: float = 60) -> openai.OpenAI:
        return openai.OpenAI(base_url=server.base_url, api_key=api_key, max_retries=0, timeout=timeout)

    return make
