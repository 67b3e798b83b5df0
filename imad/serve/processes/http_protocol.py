"""The routing server's HTTP/1.1 protocol: uvicorn's h11 one, with its own 400 in OpenAI's shape.

A request whose framing h11 refuses (a Content-Length that is negative, signed, too large, not
ASCII digits or given twice; no Host header; a broken request line) never reaches the app, so
uvicorn answered it with a plain-text "Invalid HTTP request received.". Every error of the
server is OpenAI-shaped JSON (`imad.serve.openai.error_responses`), so this one is too.
"""

from __future__ import annotations

import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

MALFORMED = json.dumps({"error": {
    "message": "the request is not valid HTTP/1.1 (its request line, Host, Content-Length or "
               "Transfer-Encoding header); nothing was read",
    "type": "invalid_request_error", "param": None, "code": "invalid_http"}}).encode()


class JsonErrorH11Protocol(H11Protocol):
    """uvicorn's H11Protocol, but its 400 for a malformed request is JSON (module docstring)."""

    def send_400_response(self, msg: str) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(MALFORMED)),
                   (b"connection", b"close")]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                      h11.Data(data=MALFORMED), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()
