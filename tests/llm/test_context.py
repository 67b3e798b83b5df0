"""The context-window check: the estimate, the refusal, and back-ends that cannot tell."""

from __future__ import annotations

import pytest

from imad.errors import ConfigError, InputTooLargeError
from imad.llm.context import check_fits, estimate_prompt_tokens, refuse_if_too_large
from imad.llm.openai_http import OpenAICompatibleChat
from imad.llm.types import ChatRequest, Message


def request(text: str, max_tokens: int = 100) -> ChatRequest:
    return ChatRequest(messages=(Message("user", text),), max_tokens=max_tokens)


def test_estimate_is_one_token_per_three_bytes_plus_message_overhead():
    messages = (Message("system", "x" * 30), Message("user", "é" * 15))  # 30 + 30 bytes
    assert estimate_prompt_tokens(messages) == 20 + 8 * 3


def test_refusal_counts_the_reserved_completion_tokens():
    refuse_if_too_large(900, request("q"), 1000, model_id="m", counted_by="test")  # 900 + 100 fits
    with pytest.raises(InputTooLargeError) as caught:
        refuse_if_too_large(901, request("q"), 1000, model_id="m", counted_by="test")
    error = caught.value
    assert (error.prompt_tokens, error.reserved_tokens, error.context_tokens) == (901, 100, 1000)
    assert str(error).startswith("the prompt is 901 tokens (test) and 100 more are reserved")


def test_openai_server_is_checked_only_with_a_configured_window():
    text = "word " * 3000  # 15,000 bytes → 5,000 estimated tokens
    unknown = OpenAICompatibleChat(model="m", base_url="http://127.0.0.1:9/v1")
    check_fits(unknown, request(text))  # no window: the server is the judge
    known = OpenAICompatibleChat(model="m", base_url="http://127.0.0.1:9/v1", context_window=4096)
    with pytest.raises(InputTooLargeError, match="estimated at 3 UTF-8 bytes per token"):
        known.chat(request(text))  # refused before any connection is tried
    check_fits(object(), request(text))  # a back-end without check_fits: nothing to check


@pytest.mark.parametrize("value", [0, -5, 1.5, True, "8k"])
def test_context_window_must_be_a_positive_whole_number(value):
    with pytest.raises(ConfigError, match="context_window"):
        OpenAICompatibleChat(model="m", base_url="http://127.0.0.1:9/v1", context_window=value)


@pytest.mark.parametrize(("field", "value"), [
    ("timeout", float("nan")), ("connect_timeout", float("inf")), ("timeout", 0), ("backoff_base", -1.0),
    ("max_backoff", float("nan"))])
def test_timeouts_and_backoffs_must_be_finite(field, value):
    with pytest.raises(ConfigError, match=f"{field}: must be a finite number"):
        OpenAICompatibleChat(model="m", base_url="http://127.0.0.1:9/v1", **{field: value})
