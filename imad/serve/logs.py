"""Structured logs of the routing server: one JSON object per line, no prompt text by default.

Each request logs one `chat_completion` event with its id, status, model, decision, tokens and
latency; question text appears only with `--log-prompts`, since prompts may hold personal data.
The decision's fields in it are the `log_line` view of `imad.decide.schema` (`decision_log_fields`).
uvicorn's own messages go through the same formatter so a log shipper sees one format.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone
from typing import Any, TextIO

from imad.decide.schema import keys_of
from imad.serve.openai.strict_json import strict_json

LOGGER_NAME = "imad.serve"


class JsonLinesFormatter(logging.Formatter):
    """`{"time", "level", "logger", "event", ...fields}` on one line; fields come from `log_event`."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(), "logger": record.name, "event": record.getMessage(),
        }
        data.update(getattr(record, "fields", {}))
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        try:
            return json.dumps(data, ensure_ascii=False, default=str, allow_nan=False)
        except ValueError:  # a non-finite number: a log shipper needs strict JSON, write null
            return strict_json(json.loads(json.dumps(data, ensure_ascii=False, default=str)))


def configure_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """Send imad's and uvicorn's logs to `stream` (default stderr) as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLinesFormatter())
    for name in (LOGGER_NAME, "uvicorn"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False


def log_event(event: str, *, level: int = logging.INFO, exc_info: bool | BaseException = False,
              **fields: Any) -> None:
    """Log `event` with `fields` as top-level keys of its JSON line (`exc_info`: the exception
    whose traceback goes with it, or True for the one being handled)."""
    logging.getLogger(LOGGER_NAME).log(level, event, extra={"fields": fields}, exc_info=exc_info)


def decision_log_fields(completion: Any) -> dict[str, Any]:
    """The `log_line` view of a chat completion's decision, read from its `imad` object and
    `usage` (whose keys the view shares)."""
    known = {**completion.imad.model_dump(), **completion.usage.model_dump()}
    return {key: known[key] for key in keys_of("log_line")}
