"""Client configuration and request shapes (no server needed)."""

import email.utils
import time

import pytest

from imad.errors import ConfigError
from imad.llm.openai_http import OpenAICompatibleChat, image_url, parse_retry_after
from imad.llm.types import ChatRequest, Message, user_prompt

SCHEMA = {"type": "object"}


def test_env_defaults(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    chat = OpenAICompatibleChat(model="m")
    assert chat.base_url == "http://127.0.0.1:9/v1"
    assert chat.api_key == "sk-test"
    assert chat._client is None  # no client until the first call


@pytest.mark.parametrize(("field", "value"), [("base_url", "ftp://x"), ("timeout", 0),
                                              ("max_retries", -1), ("structured_output", "xml"),
                                              ("max_concurrency", 0)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ConfigError, match=field):
        OpenAICompatibleChat(**{"model": "m", "base_url": "http://127.0.0.1:1/v1", field: value})


@pytest.mark.parametrize(("mode", "key", "expected"), [
    ("json_schema", "response_format", {"type": "json_schema",
                                        "json_schema": {"name": "response", "schema": SCHEMA}}),
    ("json_object_schema", "response_format", {"type": "json_object", "schema": SCHEMA}),
    ("guided_json", "guided_json", SCHEMA),
])
def test_structured_output_wire_formats(mode, key, expected):
    chat = OpenAICompatibleChat(model="m", base_url="http://127.0.0.1:1/v1", structured_output=mode)
    body = chat.request_body(ChatRequest(user_prompt("q"), json_schema=SCHEMA, seed=3))
    assert body[key] == expected
    assert body["seed"] == 3


def test_no_structured_output_sends_no_schema():
    chat = OpenAICompatibleChat(model="m", base_url="http://127.0.0.1:1/v1", structured_output="none")
    body = chat.request_body(ChatRequest(user_prompt("q"), json_schema=SCHEMA))
    assert "response_format" not in body and "guided_json" not in body
    assert not chat.supports_json_schema


def test_image_parts(tmp_path):
    image = tmp_path / "cat.png"
    image.write_bytes(b"\x89PNG fake")
    chat = OpenAICompatibleChat(model="m", base_url="http://127.0.0.1:1/v1")
    body = chat.request_body(ChatRequest((Message("user", "What is this?", (str(image),)),)))
    parts = body["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": "What is this?"}
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    with pytest.raises(ConfigError, match="image file not found"):
        image_url(str(tmp_path / "missing.jpg"))


def test_retry_after_formats():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after(future) <= 31


def test_backoff_is_bounded_and_prefers_retry_after():
    chat = OpenAICompatibleChat(model="m", base_url="http://127.0.0.1:1/v1", backoff_base=1.0,
                                max_backoff=4.0)
    assert chat._delay(0, 2.5) == 2.5
    assert chat._delay(0, 100.0) == 4.0
    assert 0.5 <= chat._delay(0, None) <= 1.0
    assert chat._delay(10, None) == 4.0
