"""Graceful shutdown: a stopping server refuses new connections but finishes in-flight requests."""

from __future__ import annotations

import threading
import time

import httpx
import openai

from imad.serve import BackgroundServer, ServeSettings, create_app
from tests.support.serving import BlockingChat, echo_factory, tagged_question


def test_shutdown_finishes_the_request_in_flight():
    chat = BlockingChat()
    settings = ServeSettings(shutdown_timeout_s=20)
    server = BackgroundServer(create_app(settings, echo_factory(chat)), settings).start()
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=60)
    outcome: dict = {}
    worker = threading.Thread(target=lambda: outcome.setdefault("answer", client.chat.completions.create(
        model="imad-svrmad-0", messages=[{"role": "user", "content": tagged_question(77)}])))
    worker.start()
    assert chat.started.wait(10)
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    deadline = time.monotonic() + 10
    while True:  # wait until the listening socket is closed: new clients are turned away
        try:
            httpx.get(server.base_url.removesuffix("/v1") + "/health", timeout=1)
        except httpx.TransportError:
            break
        assert time.monotonic() < deadline, "the server kept accepting connections while stopping"
        time.sleep(0.05)
    assert stopper.is_alive() and "answer" not in outcome  # still waiting for the in-flight request
    chat.release.set()
    worker.join(30)
    stopper.join(30)
    assert outcome["answer"].choices[0].message.content == "77"
    assert not stopper.is_alive()
