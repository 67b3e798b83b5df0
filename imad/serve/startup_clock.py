"""Where a server's start-up time goes: the phases the `server_ready` log line reports.

A server is ready seconds after it starts on an idle machine and a minute or more on a busy
one; `startup_phases` says which step took it (imports, the router and chat model, the feature
extractor's first load, the scoring processes' warm-up), so an operator can tell a slow disk, a
loaded machine and a cold cache apart.
"""

from __future__ import annotations

import time


class StartupClock:
    """Seconds since `started` (a `time.monotonic()` reading), split into named laps."""

    def __init__(self, started: float | None = None) -> None:
        self.started = time.monotonic() if started is None else started
        self.phases: dict[str, float] = {}
        self._last = self.started

    def lap(self, phase: str) -> None:
        """End `phase` now: the seconds since the previous lap (or the start) are its."""
        now = time.monotonic()
        self.phases[phase] = round(now - self._last, 3)
        self._last = now

    def summary(self) -> dict[str, object]:
        """`startup_s` (the total so far) and `startup_phases`, for the log line."""
        return {"startup_s": round(time.monotonic() - self.started, 3),
                "startup_phases": dict(self.phases)}
