"""The port while `imad serve` starts: every request gets 503 `server_starting` at once (the
`/health` body says "starting"), never a connection held in the backlog; once the app is
ready, it serves the same socket.

The responder's own behaviour runs on a real listening socket; the last tests start a real
`imad serve` (one process, and two workers) and probe it between `server_starting` and
`server_ready` in its log.
"""

from __future__ import annotations

import socket
import threading

import httpx
import pytest

from imad.serve.processes.starting import RETRY_AFTER_S, StartingResponder, starting_reply


@pytest.fixture
def listening():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield sock, f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


def test_health_says_starting_with_retry_after(listening):
    sock, url = listening
    responder = StartingResponder(sock).start()
    try:
        response = httpx.get(f"{url}/health", timeout=10)
    finally:
        assert responder.stop() == 1
    assert response.status_code == 503
    assert response.json()["status"] == "starting"
    assert response.headers["retry-after"] == str(RETRY_AFTER_S)
    assert response.headers["connection"] == "close"


def test_a_chat_request_gets_openais_error_shape(listening):
    sock, url = listening
    responder = StartingResponder(sock).start()
    try:
        response = httpx.post(f"{url}/v1/chat/completions", timeout=10,
                              json={"model": "imad", "messages": [{"role": "user", "content": "x" * 50_000}]})
    finally:
        responder.stop()
    assert response.status_code == 503
    error = response.json()["error"]
    assert (error["code"], error["type"]) == ("server_starting", "server_error")
    assert "starting" in error["message"]


def test_head_gets_the_headers_without_a_body():
    reply = starting_reply(b"HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n")
    head, body = reply.split(b"\r\n\r\n", 1)
    assert body == b""
    assert b"Content-Length: " in head and head.startswith(b"HTTP/1.1 503")


def test_after_stop_the_socket_is_left_to_the_app(listening):
    """A connection made after `stop` waits in the backlog for the app's accept: the responder
    neither answers nor closes it."""
    sock, _ = listening
    StartingResponder(sock).start().stop()
    with socket.create_connection(sock.getsockname(), timeout=10) as client:
        client.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.setblocking(True)
        accepted, _ = sock.accept()
        with accepted:
            assert accepted.recv(100).startswith(b"GET /health")


def test_it_stops_by_itself_once_ready(listening):
    sock, url = listening
    ready = threading.Event()
    responder = StartingResponder(sock, ready=ready.is_set).start()
    assert httpx.get(f"{url}/health", timeout=10).status_code == 503
    ready.set()
    responder._thread.join(10)
    assert not responder._thread.is_alive()
    assert responder.stop() == 1


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_real_server_answers_503_starting_then_200(workers, tmp_path):
    pytest.importorskip("fastapi")
    from tests.router.router_helpers import make_router
    from tests.support.serve_process import ServeProcess, upstream_stub, wait_for

    router_dir = make_router().save(tmp_path / "router")
    with upstream_stub() as upstream:
        server = ServeProcess(router_dir, upstream, tmp_path, "--workers", workers)
        try:
            wait_for(lambda: server.events("server_starting"), "server_starting in the log")
            early = httpx.get(f"{server.url}/health", timeout=30)
            server.wait_ready(int(workers))
            assert early.status_code == 503 and early.json()["status"] == "starting"
            later = httpx.get(f"{server.url}/health", timeout=30)
            assert later.status_code == 200 and later.json()["status"] == "ok"
            assert server.post(1).status_code == 200
            for ready in server.events("server_ready"):
                assert set(ready["startup_phases"]) == {"imports_and_checks", "router_and_chat_model",
                                                        "feature_extractor", "scoring_processes"}
                assert ready["startup_s"] >= sum(ready["startup_phases"].values()) - 0.01
        finally:
            server.stop()
    assert len(server.events("server_stopped")) == int(workers)  # a graceful stop, each worker
