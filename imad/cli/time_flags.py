"""Time flags of the decision-log commands: `--since T` and `--window W`.

`--since` takes an ISO 8601 date or time (`2026-12-01`, `2026-12-01T08:00`, `…Z` or with an
offset; no offset means UTC, as the log's times are) or unix seconds (`1796112000`). `--window`
takes a length with a unit: `30m`, `6h`, `1d`, `7d`. Anything else is a `ConfigError` that
names the flag and shows the accepted forms.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

from imad.errors import ConfigError

SINCE_FORMS = "an ISO 8601 date or time (2026-12-01, 2026-12-01T08:00:00Z) or unix seconds"
LATEST = 32_503_680_000.0
"""3000-01-01 in unix seconds: later is a typo, and Python's dates end at 9999."""
_DURATION = re.compile(r"([0-9]{1,6})(m|h|d)")
_UNIT_SECONDS = {"m": 60.0, "h": 3600.0, "d": 86_400.0}
_UNIX = re.compile(r"[0-9]{1,12}(\.[0-9]{1,9})?")


def parse_since(text: str, flag: str = "--since") -> float:
    """Unix seconds of `text` (see the module docstring)."""
    stripped = text.strip()
    if _UNIX.fullmatch(stripped):
        return _in_range(float(stripped), text, flag)
    try:
        moment = datetime.fromisoformat(stripped.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ConfigError(flag, f"{text!r} is not a time; give {SINCE_FORMS}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return _in_range(moment.timestamp(), text, flag)


def _in_range(value: float, text: str, flag: str) -> float:
    if not math.isfinite(value) or not 0.0 <= value < LATEST:
        raise ConfigError(flag, f"{text!r} is not a time between 1970 and 3000; give {SINCE_FORMS}")
    return value


def parse_window(text: str, flag: str = "--window") -> float:
    """Seconds of a window length such as `6h` or `1d` (at least one minute)."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise ConfigError(flag, f"{text!r} is not a window length; give a positive whole number "
                          "and a unit: 30m, 6h, 1d, 7d")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
