"""Hostile reloads (issue 32, item 6): `POST /v1/imad/admin/reload` bodies on a real loopback
server, and SIGHUP with a damaged checkpoint on a real `imad serve` process.

Every refused reload is a 4xx in OpenAI's error shape naming what is wrong, counted as `refused`
in /metrics, and the router in service keeps serving: /health still names it and a chat request
is still answered 200 by it. Waits poll with a deadline; nothing is timed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")

from features.names import schema_hash  # noqa: E402
from imad.decision_log.answer_row import router_identity  # noqa: E402
from imad.router import Router  # noqa: E402
from imad.serve import BackgroundServer, ServeSettings, create_app  # noqa: E402
from imad.serve.metrics import sample_values  # noqa: E402
from imad.serve.routes.admin import MAX_BODY_BYTES, MAX_ROUTER_CHARS  # noqa: E402
from tests.router.router_helpers import make_router  # noqa: E402
from tests.support.serving import echo_factory, tagged_question  # noqa: E402

API_KEY = "hostile-reload-key-0123456789"
AUTH = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """The router in service, and files a reload could be pointed at."""
    root = tmp_path_factory.mktemp("reload")
    serving = make_router(seed=3).save(root / "serving")
    foreign = make_router(seed=4).save(root / "foreign")
    config = json.loads((foreign / "config.json").read_text())
    names = list(reversed(config["features"]["names"]))  # a self-consistent schema of its own
    config["features"].update(names=names, hash=schema_hash(config["features"]["schema_version"], names))
    (foreign / "config.json").write_text(json.dumps(config))
    damaged = make_router(seed=5).save(root / "damaged")
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    (root / "not-a-checkpoint").mkdir()
    (root / "not-a-checkpoint" / "config.json").write_text("hello")
    (root / "not-a-checkpoint" / "model.safetensors").write_text("hello")
    (root / "plain-file").write_text("not a directory")
    return {"serving": serving, "foreign": foreign, "damaged": damaged, "root": root}


@pytest.fixture(scope="module")
def server(checkpoints) -> Iterator[BackgroundServer]:
    settings = replace(ServeSettings(api_key=API_KEY), scoring_processes=0)
    factory = echo_factory(router=make_router(seed=3))
    app = create_app(settings, factory, router_spec=str(checkpoints["serving"]))
    background = BackgroundServer(app, settings).start()
    yield background
    background.stop(timeout_s=15)


def reload(server: BackgroundServer, content: bytes | None = None) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{server.port}/v1/imad/admin/reload", content=content,
                      headers={**AUTH, "Content-Type": "application/json"}, timeout=60)


def refused_count(server: BackgroundServer) -> float:
    text = httpx.get(f"http://127.0.0.1:{server.port}/metrics", headers=AUTH, timeout=30).text
    return sum(value for labels, value in sample_values(text, "imad_router_reloads_total")
               if labels.get("result") == "refused")


def serving_hash(server: BackgroundServer) -> str:
    health = httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=30).json()
    answer = httpx.post(f"{server.base_url}/chat/completions", headers=AUTH, timeout=60, json={
        "model": "imad", "messages": [{"role": "user", "content": tagged_question(4)}]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["imad"]["router_hash"] == health["router"]["hash"]
    return health["router"]["hash"]


BODIES = [  # (id, body or a function of the checkpoints giving it, status, words in the error)
    ("not JSON", b"{router: v2", 400, "not valid JSON"),
    ("not an object", b'["imad-router-v1"]', 400, "must be a JSON object"),
    ("a string", b'"imad-router-v1"', 400, "must be a JSON object"),
    ("unknown key", b'{"router": "imad-router-v1", "force": true}', 400, "unknown reload field(s) 'force'"),
    ("router a number", b'{"router": 2}', 400, "'router' must be a string"),
    ("router a list", b'{"router": ["imad-router-v1"]}', 400, "'router' must be a string"),
    ("router empty", b'{"router": ""}', 400, "'router' is empty"),
    ("router blank", b'{"router": "   "}', 400, "'router' is empty"),
    ("router NUL", b'{"router": "imad-router-v1\\u0000"}', 400, "NUL"),
    ("router too long", json.dumps({"router": "x" * (MAX_ROUTER_CHARS + 1)}).encode(), 400,
     f"longer than {MAX_ROUTER_CHARS}"),
    ("body huge", json.dumps({"router": "x" * MAX_BODY_BYTES}).encode(), 413, "exceeds the limit"),
    ("NaN literal", b'{"router": NaN}', 400, "not valid JSON"),
    ("deep nesting", b'{"router": ' + b"[" * 200 + b"]" * 200 + b"}", 400, "not valid JSON"),
    ("unknown shipped name", b'{"router": "imad-router-v9"}', 422, "no shipped router named"),
    ("missing path", lambda c: {"router": str(c["root"] / "nowhere")}, 422, "was not loaded"),
    ("a plain file", lambda c: {"router": str(c["root"] / "plain-file")}, 422, "was not loaded"),
    ("not a checkpoint", lambda c: {"router": str(c["root"] / "not-a-checkpoint")}, 422, "config.json"),
    ("damaged weights", lambda c: {"router": str(c["damaged"])}, 422, "model.safetensors"),
    ("another feature schema", lambda c: {"router": str(c["foreign"])}, 422, "feature schema"),
    ("traversal", b'{"router": "../../../../../../etc"}', 422, "was not loaded"),
    ("traversal from a name", b'{"router": "imad-router-v1/../../../../etc/passwd"}', 422,
     "was not loaded"),
    ("dot dot", b'{"router": ".."}', 422, "was not loaded"),
    # a key named twice: Python's json keeps the last, so this would try /etc
    ("router named twice", b'{"router": "imad-router-v1", "router": "/etc"}', 400,
     "an object names the key 'router' twice"),
]


@pytest.mark.parametrize(("body", "status", "words"), [case[1:] for case in BODIES],
                         ids=[case[0] for case in BODIES])
def test_a_bad_reload_is_refused_and_the_router_keeps_serving(server, checkpoints, body, status, words):
    before, refused = serving_hash(server), refused_count(server)
    content = json.dumps(body(checkpoints)).encode() if callable(body) else body
    response = reload(server, content)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert words in error["message"]
    assert set(error) == {"message", "type", "param", "code"}
    assert serving_hash(server) == before
    assert refused_count(server) == refused + (status == 422)  # a bad body is no reload attempt


def test_a_reload_needs_the_key(server):
    response = httpx.post(f"http://127.0.0.1:{server.port}/v1/imad/admin/reload", timeout=30)
    assert response.status_code == 401


def test_an_empty_body_reloads_the_start_up_router(server, checkpoints):
    response = reload(server, b"")
    assert response.status_code == 200, response.text
    expected = router_identity(Router.load(checkpoints["serving"])).hash
    assert response.json()["router"]["hash"] == expected == serving_hash(server)


@pytest.mark.slow
def test_sighup_with_a_damaged_checkpoint_keeps_the_old_router(tmp_path):
    pytest.importorskip("spacy")
    from tests.support.serve_process import ServeProcess, upstream_stub, wait_for

    router_dir = make_router(seed=11).save(tmp_path / "router")
    with upstream_stub() as upstream:
        server = ServeProcess(router_dir, upstream, tmp_path, "--scoring-processes", "1")
        try:
            server.wait_ready()
            before = server.health()["router"]["hash"]
            weights = router_dir / "model.safetensors"
            weights.write_bytes(weights.read_bytes()[:100])  # a deploy that went wrong
            os.kill(server.process.pid, signal.SIGHUP)
            wait_for(lambda: server.events("router_reload_refused"), "the refusal's log line")
            refusals = server.events("router_reload_refused")
            assert len(refusals) == 1 and "model.safetensors" in refusals[0]["error"]
            assert refusals[0]["why"] == "SIGHUP" and refusals[0]["serving_hash"] == before
            answer = server.post(1)
            assert answer.status_code == 200 and answer.json()["imad"]["router_hash"] == before
            assert server.health()["router"]["hash"] == before
            assert not server.events("router_reloaded")
            assert "Traceback" not in server.log.read_text()
            shutil.rmtree(router_dir)
            make_router(seed=12).save(router_dir)  # the deploy fixed: the next SIGHUP takes it
            os.kill(server.process.pid, signal.SIGHUP)
            wait_for(lambda: server.events("router_reloaded"), "the reload's log line")
            fixed = router_identity(Router.load(router_dir)).hash
            assert server.health()["router"]["hash"] == fixed != before
        finally:
            server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_sighup_after_an_api_reload_reloads_the_router_in_service(tmp_path, workers):
    """SIGHUP re-reads the router in service: after `POST …/reload {"router": B}` that is B, not
    the start-up router (which it went back to silently)."""
    from tests.support.serve_process import ServeProcess, upstream_stub, wait_for

    first = make_router(seed=11).save(tmp_path / "first")
    second = make_router(seed=12).save(tmp_path / "second")
    wanted = router_identity(Router.load(second)).hash
    flags = ("--no-scoring-process",) if workers == 1 else ("--no-scoring-process", "--workers", "2")
    with upstream_stub() as upstream:
        server = ServeProcess(first, upstream, tmp_path, *flags)
        try:
            server.wait_ready(workers)
            answered = httpx.post(f"{server.url}/v1/imad/admin/reload", json={"router": str(second)},
                                  timeout=180)
            assert answered.status_code == 200, answered.text
            reloaded = workers  # the POST's, in every worker
            wait_for(lambda: len(server.events("router_reloaded")) == reloaded, "the POST's reloads")
            os.kill(server.process.pid, signal.SIGHUP)
            wait_for(lambda: len(server.events("router_reloaded")) == reloaded + workers,
                     "every worker's reload after SIGHUP")
            assert {event["router"] for event in server.events("router_reloaded")[reloaded:]} == \
                {str(second)}
            for _ in range(2 * workers):  # under --workers, whichever worker answers
                assert server.post(1).json()["imad"]["router_hash"] == wanted
        finally:
            server.stop()
