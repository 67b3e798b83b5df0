"""Structured logs: one JSON line per request, with no prompt text unless --log-prompts."""

from __future__ import annotations

import io
import json
import logging

import openai
import pytest

from imad.serve import ServeSettings
from imad.serve.logs import LOGGER_NAME, JsonLinesFormatter, configure_logging, log_event

SECRET = "Which number is tagged #31? My patient's name is Ada Quist."


def request_lines(caplog) -> list[dict]:
    formatter = JsonLinesFormatter()
    lines = [formatter.format(r) for r in caplog.records if r.name == LOGGER_NAME]
    return [json.loads(line) for line in lines if '"chat_completion"' in line]


@pytest.mark.parametrize("log_prompts", [False, True])
def test_one_json_line_per_request_without_prompt_text_by_default(start_server, client_for, caplog,
                                                                  log_prompts):
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    server = start_server(ServeSettings(log_prompts=log_prompts))
    completion = client_for(server).chat.completions.create(
        model="imad-svrmad-0", messages=[{"role": "user", "content": SECRET}])
    [line] = request_lines(caplog)
    assert (line["event"], line["status"], line["request_id"]) == ("chat_completion", 200, completion.id)
    assert line["question_chars"] == len(SECRET) and line["source"] == "single_agent"
    assert line["prompt_tokens"] == completion.usage.prompt_tokens and line["latency_ms"] > 0
    text = "\n".join(JsonLinesFormatter().format(r) for r in caplog.records)
    assert ("Ada Quist" in text) is log_prompts


def test_refused_requests_are_logged_with_status_and_code(start_server, client_for, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    server = start_server()
    with pytest.raises(openai.AuthenticationError):
        client_for(server, api_key="nope").chat.completions.create(
            model="imad", messages=[{"role": "user", "content": SECRET}])
    [line] = request_lines(caplog)
    assert (line["status"], line["code"], line["level"]) == (401, "invalid_api_key", "warning")
    assert "Ada Quist" not in json.dumps(line)


def test_configure_logging_writes_json_lines():
    stream = io.StringIO()
    loggers = [logging.getLogger(name) for name in (LOGGER_NAME, "uvicorn")]
    saved = [(logger.handlers[:], logger.level, logger.propagate) for logger in loggers]
    try:
        configure_logging("info", stream)
        log_event("hello", status=200, p=None)
        logging.getLogger("uvicorn.error").info("Started server process [%d]", 42)
    finally:
        for logger, (handlers, level, propagate) in zip(loggers, saved, strict=True):
            logger.handlers[:], logger.propagate = handlers, propagate
            logger.setLevel(level)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert (first["event"], first["status"], first["p"], first["level"]) == ("hello", 200, None, "info")
    assert second["event"] == "Started server process [42]" and second["logger"] == "uvicorn.error"
