"""The one reader of a JSON request body that must be an object (chat, feedback, reload).

Strict JSON (`imad.jsonio`): NaN/Infinity, integers of more than 100 digits and deep nesting are
refused; anything but an object is a 400 that names the JSON type it got, so every endpoint
refuses the same bodies with the same words.
"""

from __future__ import annotations

from typing import Any

from imad.errors import ServeError
from imad.json_lines import json_type
from imad.jsonio import UntrustedJSONError, loads_untrusted


def json_object_body(body: bytes, what: str, *, max_bytes: int | None = None,
                     check_strings: bool = True, example: str = "") -> dict[str, Any]:
    """`body` decoded as a JSON object, or ServeError 400 (`invalid_json`) naming `what` ("the
    feedback body") and what was wrong; `example` is shown after "a JSON object" when given.
    `max_bytes`: None when the caller has already bounded the body (limits.read_body)."""
    try:
        payload = loads_untrusted(body, max_bytes=max(len(body), 1) if max_bytes is None else max_bytes,
                                  check_strings=check_strings)
    except UntrustedJSONError as error:
        raise ServeError(400, f"{what} is not valid JSON: {error}", code="invalid_json") from None
    if not isinstance(payload, dict):
        shown = f" such as {example}" if example else ""
        raise ServeError(400, f"{what} must be a JSON object{shown}, got a JSON {json_type(payload)}",
                         code="invalid_json")
    return payload
