"""Named counts that a listener hears as they change.

The shadow debate runner (`imad.shadow`) and the decision log (`imad.decision_log.writer`)
each count what became of the work handed to them, from request threads and background
threads at once. The totals are read by `/v1/imad/stats` and the CLI; each change is told as
it happens to a listener, `on_count(event, n)`, which is how the server's Prometheus counters
follow them (`imad.serve.metrics`). `EventCounts` is that idea, once:

- the event names are declared up front, so a misspelt name is refused (`UnknownEventError`
  naming it) instead of starting a count nobody reads;
- `add(name, n)` grows a count under a lock; n = 0 changes nothing and tells nobody;
- `counts[name]` reads one count, `snapshot()` all of them (a copy, in declared order), and
  `group("dropped")` the non-zero counts named `dropped_<reason>`, by reason;
- what a failing listener does is the owner's explicit choice: without `on_listener_error`
  its exception goes on to the caller of `add` (the count is already taken); with it, the
  exception is handed to that function and counting goes on (the decision log, which must
  never fail a request or stop its writer thread).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterable

from imad.errors import ConfigError, UnknownEventError

Listener = Callable[[str, int], None]
"""`on_count(event, n)`: told the event's name and the increment, after the count grew."""


class EventCounts:
    """Thread-safe counts of a fixed set of named events, each change told to a listener."""

    def __init__(self, names: Iterable[str], *, on_count: Listener | None = None,
                 on_listener_error: Callable[[Exception], None] | None = None) -> None:
        self._counts = dict.fromkeys(_event_names(names), 0)
        self.on_count = on_count
        """Told each non-zero change (see `Listener`); None: nobody listens."""
        self.on_listener_error = on_listener_error
        """Handed an exception `on_count` raised; None: it propagates out of `add`."""
        self._lock = threading.Lock()

    @property
    def names(self) -> tuple[str, ...]:
        """The declared event names, in the order they were declared."""
        return tuple(self._counts)

    def add(self, name: str, n: int = 1) -> int:
        """Grow the count `name` by `n` (≥ 0) and tell the listener; the count after it.
        `ConfigError` for an `n` that is not a whole number ≥ 0 (a bool, a float, a negative):
        a count only grows, and a Prometheus counter told a negative step would fail later."""
        self._check(name)
        n = _increment(n)
        if n == 0:
            return self[name]
        with self._lock:
            self._counts[name] += n
            total = self._counts[name]
        if self.on_count is not None:
            try:
                self.on_count(name, n)
            except Exception as error:
                if self.on_listener_error is None:
                    raise
                self.on_listener_error(error)
        return total

    def __getitem__(self, name: str) -> int:
        self._check(name)
        with self._lock:
            return self._counts[name]

    def snapshot(self) -> dict[str, int]:
        """Every count, in declared order: a copy that later changes leave alone."""
        with self._lock:
            return dict(self._counts)

    def group(self, prefix: str) -> dict[str, int]:
        """The non-zero counts named `<prefix>_<key>`, by key, in declared order (the decision
        log's `dropped_<reason>` counts as {reason: rows})."""
        start = f"{prefix}_"
        return {name[len(start):]: count for name, count in self.snapshot().items()
                if name.startswith(start) and count}

    def after_fork(self) -> None:
        """Take a fresh lock in a forked child: the parent's may have been held by a thread the
        child does not have. The counts carry over."""
        self._lock = threading.Lock()

    def _check(self, name: str) -> None:
        if not isinstance(name, str) or name not in self._counts:
            raise UnknownEventError(name, self.names)


def _event_names(names: Iterable[str]) -> tuple[str, ...]:
    """The declared names: an iterable of distinct non-empty strings (a string alone would be
    read as its letters)."""
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise ConfigError("names", f"expected a list of event names, got {type(names).__name__}")
    listed = tuple(names)
    bad = [name for name in listed if not isinstance(name, str) or not name]
    if bad or len(set(listed)) != len(listed):
        what = f"{bad[0]!r}" if bad else "a name twice"
        raise ConfigError("names", f"expected distinct non-empty strings, got {what}")
    return listed


def _increment(n: int) -> int:
    try:
        if isinstance(n, bool):
            raise TypeError
        n = operator.index(n)
    except TypeError:
        raise ConfigError("n", f"expected a whole number ≥ 0, got {n!r}") from None
    if n < 0:
        raise ConfigError("n", f"a count only grows: expected a whole number ≥ 0, got {n}")
    return n
