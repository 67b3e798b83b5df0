"""The decision log as a request sees it: `record(row)` queues, a background thread writes.

A request must never wait for a disk or a database, and neither must ever fail a request. `record` only puts
the row on a bounded queue (microseconds); one thread per process takes what has queued, up to
`batch_size` rows, and writes them in one transaction, then prunes past `max_rows`. `flush()`
waits until everything queued so far is written; `close()` flushes and stops the thread.

Whatever goes wrong after the row was handed over is counted, never raised: a full queue, a
read-only or full disk, a file locked past the busy timeout, a row that does not encode. The
row is dropped, the count `dropped_<reason>` grows (`stats`, an `EventCounts` of `LOG_EVENTS`;
`stats.group("dropped")` is {reason: rows}), and the first drop for each reason logs one
warning line saying why (later ones are only counted, so a full disk does not flood the log).
A file that is not a decision log (foreign, damaged, newer schema) is refused when the log is
opened, before serving starts: that is a wrong path, not a disk failure; so is a database that
cannot be reached or used at start. A database that goes away later is waited for: the rows
stay queued (up to the queue's bound) and are written when it answers again
(`imad.decision_log.postgres`); rows still unwritten when the log closes are dropped as
`unreachable`.

What a row may hold (and the text it keeps without `log_text`) is `imad.decision_log.encode`'s.
`amend` adds to a row already recorded (a shadow debate's answer, which arrives after the
response) and `label` stores an outcome; both run on the writer thread in queue order, so they
always find a row this process recorded before them.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imad.decision_log.columns import ID, LOG_COLUMNS, TIME, LogColumn
from imad.decision_log.encode import check_options, encode_row, encode_values
from imad.decision_log.labels import Label, set_label
from imad.decision_log.location import open_writer_store
from imad.decision_log.postgres_errors import STORE_ERRORS, failure_kind
from imad.decision_log.store import DEFAULT_BUSY_TIMEOUT_S, LogStore
from imad.decision_log.url import parse_location
from imad.errors import ConfigError, DecisionLogError, ImadError
from imad.event_counts import EventCounts, Listener

logger = logging.getLogger("imad.decision_log")

_STOP = object()
DROP_REASONS = ("queue_full", "closed", "unwritable", "busy", "damaged", "bad_row", "unknown_id",
                "unreachable", "other")
"""Why rows (and amendments) are dropped: the queue was full, the log closed, the store refused
the write (`failure_kind`'s unwritable, busy, damaged, other), a row did not encode or fit, an
amendment named a row not in the log, the database could not be reached when the log closed."""
LOG_EVENTS = ("recorded", "written", "duplicates", "pruned", "amended",
              *(f"dropped_{reason}" for reason in DROP_REASONS))
"""The decision log's counts: what it did with the rows handed to it (the metrics hear them)."""


@dataclass(frozen=True)
class _LabelJob:
    label: Label
    done: Future


@dataclass(frozen=True)
class _Amendment:
    values: Mapping[str, Any]


class DecisionLog:
    """A process's handle on a decision log file; thread-safe `record`, background writes."""

    def __init__(self, path: str | Path, *, columns: Sequence[LogColumn] = LOG_COLUMNS,
                 max_rows: int | None = None, log_text: bool = False, queue_size: int = 10_000,
                 batch_size: int = 512, synchronous: str = "NORMAL",
                 busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
                 on_count: Listener | None = None) -> None:
        """`on_count(event, n)` hears every change of `stats` (`LOG_EVENTS`): the server's
        metrics count them. An exception it raises is logged once and counting goes on."""
        check_options(max_rows=max_rows, queue_size=queue_size, batch_size=batch_size,
                      synchronous=synchronous, busy_timeout_s=busy_timeout_s)
        self.location = parse_location(path)
        self.path = self.location.path  # a URL with its password hidden
        self.columns = tuple(columns)
        self.max_rows = max_rows
        self.log_text = log_text
        self.batch_size = batch_size
        self.stats = EventCounts(LOG_EVENTS, on_count=on_count, on_listener_error=self._listener_failed)
        self._options = {"busy_timeout_s": busy_timeout_s, "synchronous": synchronous}
        self._reasons_logged: set[str] = set()
        self._unopened = "unwritable"
        """Why the file last failed to open: the reason rows are dropped while it cannot be."""
        self._closed = False
        self._closing = threading.Event()
        self._start(queue_size)
        try:  # a database that cannot be reached at start is an error, a full disk is not
            self._store: LogStore | None = (open_writer_store(self.location, self.columns,
                                                              stop=self._closing)
                                            if self.location.database else self._open(refuse=True))
        except BaseException:
            self._queue.put(_STOP)
            raise

    def _start(self, queue_size: int) -> None:
        """A fresh lock (the log's and its counts'), queue and writer thread for this process. A
        forked child (gunicorn's workers) inherits neither a running thread nor a usable SQLite
        connection, so its first `record` starts its own and reopens the file."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self.stats.after_fork()
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._thread = threading.Thread(target=self._run, name="imad-decision-log", daemon=True)
        self._thread.start()

    def record(self, row: Mapping[str, Any]) -> bool:
        """Queue one decision row (column name → value); False when it was dropped instead.

        `time` defaults to now. The mapping is not copied: do not change it afterwards."""
        if self._closed:
            self._drop("closed", 1, "the log is closed")
            return False
        if self._pid != os.getpid():
            self._store = None  # the parent's connection: never used across a fork
            self._start(self._queue.maxsize)
        if not isinstance(row, (Mapping, _Amendment)):
            self._drop("bad_row", 1, f"a row is a {type(row).__name__}, not a mapping")
            return False
        if isinstance(row, Mapping) and TIME not in row:
            row = {**row, TIME: time.time()}
        try:
            self._queue.put_nowait(row)
        except queue.Full:
            self._drop("queue_full", 1, f"the write queue is full ({self._queue.maxsize} rows); "
                       "the disk is slower than the traffic")
            return False
        self.stats.add("recorded")
        return True

    def amend(self, values: Mapping[str, Any]) -> bool:
        """Queue new values for the row with the id `values[ID]` (a shadow debate's answer and tokens,
        which arrive after the response); False when dropped. Never raises, like `record`."""
        if not isinstance(values, Mapping):
            self._drop("bad_row", 1, f"an amendment is a {type(values).__name__}, not a mapping")
            return False
        return self.record(_Amendment(values))  # type: ignore[arg-type]

    def label(self, label: Label, *, timeout_s: float = 30.0) -> int:
        """Store an outcome label; its change count (0 for a first label). It runs on the writer
        thread after every row this process recorded before it, so a label posted right after
        its response finds the row. `UnknownDecisionError` for an id the log does not hold
        (another worker may still have it queued: a client retries), `DecisionLogError` when the
        file refuses the write or the writer does not answer within `timeout_s`."""
        if not isinstance(label, Label):
            raise ConfigError("label", f"expected an imad.decision_log.labels.Label, got "
                              f"{type(label).__name__}")
        if self._closed:
            raise DecisionLogError(f"decision log {self.path} is closed")
        if self._pid != os.getpid():
            self._store = None
            self._start(self._queue.maxsize)
        job = _LabelJob(label, Future())
        try:
            self._queue.put(job, timeout=timeout_s)
            return job.done.result(timeout=timeout_s)
        except (queue.Full, FutureTimeout):
            raise DecisionLogError(f"decision log {self.path}: the writer did not take the label "
                                   f"within {timeout_s:g} s (the disk is slow or locked)") from None

    def flush(self) -> None:
        """Wait until every row queued so far is written (or dropped and counted)."""
        self._queue.join()

    def close(self) -> None:
        """Flush, stop the writer thread and close the file. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()  # a writer waiting for an unreachable database gives up
        self._queue.put(_STOP)
        self._thread.join()
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> DecisionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- the writer thread -----------------------------------------------------------------

    def _open(self, *, refuse: bool = False) -> LogStore | None:
        """The store, or None (rows dropped and counted) when the disk refuses the file. A file
        that is not a log this imad writes raises with `refuse` (when the log is opened, before
        serving); later (a reopen after a fork, on the writer thread) its rows are dropped as
        "damaged", since raising there would end the writer thread."""
        try:
            return open_writer_store(self.location, self.columns, stop=self._closing, **self._options)
        except STORE_ERRORS as error:
            self._unopened = failure_kind(error)
            self._note(self._unopened, f"cannot open {self.path}: {error}")
            return None
        except DecisionLogError as error:
            if refuse:
                raise
            self._unopened = "damaged"
            self._note("damaged", str(error))
            return None

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            batch = [first]
            while len(batch) < self.batch_size:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(item is _STOP for item in batch)
            try:
                self._process([item for item in batch if item is not _STOP])
            finally:
                for _ in batch:
                    self._queue.task_done()
            if stop:
                return

    def _process(self, items: list[Any]) -> None:
        """Write the rows in queue order; a label job runs after the rows queued before it."""
        rows: list[Mapping[str, Any]] = []
        for item in items:
            if isinstance(item, (_LabelJob, _Amendment)):
                if rows:
                    self._write(rows)
                    rows = []
                if isinstance(item, _LabelJob):
                    self._run_label(item)
                else:
                    self._amend(item.values)
            else:
                rows.append(item)
        if rows:
            self._write(rows)

    def _run_label(self, job: _LabelJob) -> None:
        if self._store is None:
            self._store = self._open()
        if self._store is None:
            job.done.set_exception(DecisionLogError(f"decision log {self.path} cannot be opened; "
                                                    "the label was not stored"))
            return
        try:
            job.done.set_result(set_label(self._store, job.label))
        except ImadError as error:
            job.done.set_exception(error)
        except Exception as error:  # never kill the writer thread
            job.done.set_exception(DecisionLogError(f"decision log {self.path}: {error}"))

    def _amend(self, values: Mapping[str, Any]) -> None:
        try:
            encoded = encode_values(values, self.columns, log_text=self.log_text)
        except (ValueError, TypeError) as error:
            self._drop("bad_row", 1, f"an amendment does not fit the log's columns ({error})")
            return
        if self._store is None:
            self._store = self._open()
            if self._store is None:
                self._drop(self._unopened, 1, None)
                return
        try:
            found = self._store.amend(encoded)
        except STORE_ERRORS as error:
            self._drop(failure_kind(error), 1, f"cannot write {self.path}: {error}")
            return
        if not found:
            self._drop("unknown_id", 1, f"an amendment names id {values[ID]!r}, which the log "
                       "does not hold (pruned, or recorded by another process)")
            return
        self.stats.add("amended")

    def _write(self, rows: list[Mapping[str, Any]]) -> None:
        encoded = []
        for row in rows:
            try:
                encoded.append(encode_row(row, self.columns, log_text=self.log_text))
            except (ValueError, TypeError) as error:
                self._drop("bad_row", 1, f"a row does not fit the log's columns ({error})")
        if not encoded:
            return
        if self._store is None:
            self._store = self._open()
            if self._store is None:
                self._drop(self._unopened, len(encoded), None)
                return
        try:
            result = self._store.insert(encoded)
            pruned = self._store.prune(self.max_rows) if self.max_rows is not None else 0
        except STORE_ERRORS as error:
            self._drop(failure_kind(error), len(encoded), f"cannot write {self.path}: {error}")
            return
        self.stats.add("written", result.inserted)
        if result.rejected:
            self._drop("bad_row", result.rejected, f"{result.rejected} row(s) hold a value the "
                       "database cannot store (a NUL character, a mistyped value)")
        self.stats.add("duplicates", result.duplicates)
        self.stats.add("pruned", pruned)

    def _drop(self, reason: str, count: int, why: str | None) -> None:
        self.stats.add(f"dropped_{reason}", count)
        if why is not None:
            self._note(reason, why)

    def _listener_failed(self, error: Exception) -> None:
        """A broken listener must not stop the writer thread nor fail a request: noted once."""
        self._note("listener", f"on_count failed ({type(error).__name__}: {error})")

    def _note(self, reason: str, why: str) -> None:
        with self._lock:
            if reason in self._reasons_logged:
                return
            self._reasons_logged.add(reason)
        logger.warning("decision log: %s: %s; serving goes on, later ones for this reason are only "
                       "counted", "rows are dropped" if reason != "listener" else "a counter failed",
                       why)
