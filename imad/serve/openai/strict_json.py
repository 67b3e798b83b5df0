"""Strict JSON in and out of the server (RFC 8259).

Out: no NaN or Infinity in bodies, headers, SSE or logs. Python's `json` writes `NaN` for a
non-finite float, which no strict parser (browsers, Go, the openai SDK's httpx) accepts, and
Starlette's JSONResponse raises on it instead. A non-finite number means "no score", so it is
written as null.

In: the one reader of a JSON request body that must be an object (chat, feedback, reload),
`json_object_body`. Strict JSON (`imad.jsonio`): NaN/Infinity, integers of more than 100 digits,
deep nesting and an object naming a key twice (`{"id": "A", "id": "B"}`, which Python's `json`
reads as its last; the rule `imad log label` applies to its lines) are refused; anything but an
object is a 400 that names the JSON type it got, so every endpoint refuses the same bodies with
the same words.
"""

from __future__ import annotations

import json
import math
from typing import Any

from imad.errors import ServeError
from imad.json_lines import json_type
from imad.jsonio import RepeatedKeyError, UntrustedJSONError, loads_untrusted


def finite_or_null(value: Any) -> Any:
    """`value` with every non-finite float (NaN, ±inf), at any depth, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(item) for item in value]
    return value


def strict_json(value: Any, *, ensure_ascii: bool = False) -> str:
    """Compact, strict JSON (RFC 8259): non-finite numbers become null, never NaN/Infinity."""
    return json.dumps(finite_or_null(value), ensure_ascii=ensure_ascii, allow_nan=False,
                      separators=(",", ":"))


def json_object_body(body: bytes, what: str, *, max_bytes: int | None = None,
                     check_strings: bool = True, example: str = "") -> dict[str, Any]:
    """`body` decoded as a JSON object, or ServeError 400 (`invalid_json`) naming `what` ("the
    feedback body") and what was wrong; `example` is shown after "a JSON object" when given.
    `max_bytes`: None when the caller has already bounded the body (limits.read_body)."""
    try:
        payload = loads_untrusted(body, max_bytes=max(len(body), 1) if max_bytes is None else max_bytes,
                                  check_strings=check_strings, unique_keys=True)
    except UntrustedJSONError as error:
        param = error.key if isinstance(error, RepeatedKeyError) else None
        raise ServeError(400, f"{what} is not valid JSON: {error}", code="invalid_json",
                         param=param) from None
    if not isinstance(payload, dict):
        shown = f" such as {example}" if example else ""
        raise ServeError(400, f"{what} must be a JSON object{shown}, got a JSON {json_type(payload)}",
                         code="invalid_json")
    return payload
