"""Every error the routing server sends has OpenAI's shape `{"error": {"message", "type", "param",
"code"}}`: the app's handlers turn a `ServeError`, Starlette's 404/405 and FastAPI's validation
errors into it, so no endpoint writes an error body by hand. A client that hangs up while
sending its body to any endpoint (feedback, reload, …) is one `client_disconnected` log line,
status 499, never an ASGI traceback (the chat endpoint also counts it in its metrics).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from imad.errors import ServeError
from imad.serve.logs import log_event

CLIENT_CLOSED_REQUEST = 499
"""nginx's status for a client that closed its connection before the answer (nobody reads it)."""


def error_response(error: ServeError, request_id: str | None = None) -> JSONResponse:
    """The OpenAI-shaped JSON error response for `error`, with its headers."""
    headers = dict(error.headers)
    if request_id:
        headers["X-Request-Id"] = request_id
    return JSONResponse(error.to_body(), status_code=error.status, headers=headers)


def install_error_handlers(app: FastAPI, check_key: Callable[[Request], None] | None = None) -> None:
    """Answer every refusal of `app` in OpenAI's error shape (a refused ServeError is logged).
    `check_key(request)`: the key check of a guarded path, run before a 405 is answered (its 401
    comes first, so a caller without the key learns nothing of which methods a route takes)."""

    @app.exception_handler(ServeError)
    async def on_serve_error(request: Request, error: ServeError) -> JSONResponse:
        log_event("request_refused", level=logging.WARNING, path=request.url.path,
                  status=error.status, code=error.code, error=error.message)
        return error_response(error)

    @app.exception_handler(HTTPException)
    async def on_http_error(request: Request, error: HTTPException) -> JSONResponse:
        if error.status_code == 405 and check_key is not None:
            try:
                check_key(request)
            except ServeError as refusal:
                return await on_serve_error(request, refusal)
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        message = f"{request.method} {request.url.path}: {error.detail}"
        return error_response(ServeError(error.status_code, message, code=code))

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        return error_response(ServeError(400, f"invalid request: {error.errors()[0]['msg']}",
                                         code="invalid_request"))

    @app.exception_handler(ClientDisconnect)
    async def on_client_gone(request: Request, error: ClientDisconnect) -> Response:
        log_event("client_disconnected", level=logging.WARNING, path=request.url.path,
                  status=CLIENT_CLOSED_REQUEST, stage="sending its request")
        return Response(status_code=CLIENT_CLOSED_REQUEST)
