"""`POST /v1/chat/completions`: the pipeline on the last user message.

The answer comes back as a standard chat completion (or SSE chunks with `stream: true`) whose
`usage` counts every LLM call made, with the routing decision in the extra field `imad` and the
header `X-Imad-Decision` (compact ASCII JSON). The model name picks back-end and τ
(`imad.serve.openai.model_names`). Every request — refused by the key check, refused by the
handler, answered or abandoned — is one `chat_completion` log line (or `client_disconnected`)
and one count in `/metrics`; with `--decision-log` each answered request is also one row of the
decision log (queued, written by the log's own thread), and with `--shadow --shadow-debate-rate
R` a sampled answer's debate is queued once the response is sent, never on its latency. All of
that is `ChatServing.settle`'s (`imad.serve.chat_serving`): the handler parses, asks the app's
`ChatServing` for the answer and returns what `settle` makes of it. `CountedRoute` settles the
refusals that happen before the handler runs.

`stream_options` without `stream: true` is a 400, as OpenAI's API answers it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute

from imad.errors import ServeError
from imad.serve.chat_serving import ChatCall
from imad.serve.limits import read_body
from imad.serve.openai.protocol import parse_chat_request
from imad.serve.routes.state import Server


class CountedRoute(APIRoute):
    """A route whose refusals before its handler (a router dependency such as the key check)
    are logged and counted like the handler's own."""

    def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
        handle = super().get_route_handler()

        async def handle_counted(request: Request) -> Response:
            clock = time.perf_counter()
            try:
                return await handle(request)
            except ServeError as error:
                return request.app.state.server.chat.settle(ChatCall(clock=clock), error)

        return handle_counted


async def wait_for_disconnect(request: Request) -> None:
    """Return once the client of `request` has disconnected (its body must be read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


router = APIRouter(route_class=CountedRoute)


@router.post("/v1/chat/completions")
async def chat_completions(request: Request, server: Server) -> Response:
    call, serving = ChatCall(), server.chat
    try:
        chat = parse_chat_request(await read_body(request, server.settings.max_request_bytes))
        served = await serving.answer(call, chat, disconnected=lambda: wait_for_disconnect(request))
    except Exception as error:  # a refusal, a client gone or a bug: `settle` tells which
        return serving.settle(call, error)
    return serving.settle(call, served)
