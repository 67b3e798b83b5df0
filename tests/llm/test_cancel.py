"""CancellableChat: calls go through until `cancel()`, then none does."""

from __future__ import annotations

import pytest

from imad.errors import RequestCancelledError
from imad.llm.cancel import CancellableChat
from imad.llm.scripted import ScriptedChat
from imad.llm.types import ChatRequest, Message

REQUEST = ChatRequest(messages=(Message("user", "Is it?"),))


def test_calls_pass_until_cancelled_then_none_reaches_the_model():
    inner = ScriptedChat(lambda request: "yes")
    chat = CancellableChat(inner)
    assert chat.chat(REQUEST).text == "yes" and not chat.cancelled
    chat.cancel("the client disconnected")
    with pytest.raises(RequestCancelledError, match="the client disconnected; no further call"):
        chat.chat(REQUEST)
    with pytest.raises(RequestCancelledError):
        chat.chat_batch([REQUEST, REQUEST])
    assert len(inner.calls) == 1 and chat.cancelled


def test_a_cancel_during_a_batch_stops_its_remaining_calls():
    chat: CancellableChat

    def respond(request):
        chat.cancel()
        return "yes"

    inner = ScriptedChat(respond)
    chat = CancellableChat(inner)
    replies = chat.chat_batch([REQUEST, REQUEST, REQUEST])
    assert replies[0].text == "yes"
    assert [type(r) for r in replies[1:]] == [RequestCancelledError, RequestCancelledError]
    assert len(inner.calls) == 1
