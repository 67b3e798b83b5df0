"""Strict JSON out of the server (RFC 8259): no NaN or Infinity in bodies, headers, SSE or logs.

Python's `json` writes `NaN` for a non-finite float, which no strict parser (browsers, Go, the
openai SDK's httpx) accepts, and Starlette's JSONResponse raises on it instead. A non-finite
number means "no score", so it is written as null.
"""

from __future__ import annotations

import json
import math
from typing import Any


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
