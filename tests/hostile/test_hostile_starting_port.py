"""Hostile connections to a starting server's port (`imad.serve.processes.starting`): whatever
arrives before the app is ready — garbage, nothing, a client that never finishes its headers,
headers past the read limit, a body of megabytes, a client that vanishes — gets a 503 or a
closed connection, and the responder goes on answering the next client."""

from __future__ import annotations

import socket

import httpx
import pytest

from imad.serve.processes.starting import READ_LIMIT_BYTES, StartingResponder


@pytest.fixture
def responder():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    running = StartingResponder(sock).start()
    yield sock.getsockname()
    running.stop()
    sock.close()


def exchange(address: tuple[str, int], payload: bytes, *, close_early: bool = False) -> bytes:
    """Send `payload` on a fresh connection, half-close, and read the whole answer."""
    with socket.create_connection(address, timeout=10) as client:
        if payload:
            client.sendall(payload)
        if close_early:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            return b""
        client.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := client.recv(65_536):
            answer += chunk
        return answer


@pytest.mark.parametrize(("payload", "expected"), [
    pytest.param(b"\x00\xff\xfe garbage \r\n\r\n", b"HTTP/1.1 503", id="binary garbage"),
    pytest.param(b"GET\r\n\r\n", b"HTTP/1.1 503", id="request line without a path"),
    pytest.param(b"", b"HTTP/1.1 503", id="nothing, then end of stream"),
    pytest.param(b"GET /health HTTP/1.1\r\nX: " + b"a" * (READ_LIMIT_BYTES + 10), b"HTTP/1.1 503",
                 id="headers past the read limit"),
    pytest.param(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 4000000\r\n\r\n"
                 + b"{" * 4_000_000, b"HTTP/1.1 503", id="a body of 4 MB"),
    pytest.param(b"GET /health?probe=1 HTTP/1.1\r\nHost: x\r\n\r\n", b'"status": "starting"',
                 id="a query string on /health"),
])
def test_every_request_gets_a_503(responder, payload, expected):
    assert expected in exchange(responder, payload)
    assert httpx.get(f"http://{responder[0]}:{responder[1]}/health", timeout=10).status_code == 503


def test_a_client_that_never_finishes_its_headers_is_answered_after_the_client_timeout(responder):
    with socket.create_connection(responder, timeout=30) as client:
        client.sendall(b"GET /hea")
        assert client.recv(100).startswith(b"HTTP/1.1 503")
    assert httpx.get(f"http://{responder[0]}:{responder[1]}/health", timeout=10).status_code == 503


def test_a_client_that_resets_mid_request_does_not_stop_the_responder(responder):
    exchange(responder, b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 99\r\n", close_early=True)
    assert httpx.get(f"http://{responder[0]}:{responder[1]}/health", timeout=10).status_code == 503
