"""Shadow debates: run the debate beside a served single answer, off the request path.

In shadow mode every answer is scored and decided as usual but the single answer is served. To
measure what the debate *would* have changed, a seeded random share R of requests — chosen
without looking at the decision, so would-escalate and would-keep answers are sampled alike
and the comparison is unbiased — also gets its debate, after the response was sent.

- `ShadowSampler(rate, seed)` picks the requests: a hash of the seed and the completion id
  against R, so the same id is always picked or not (reproducible, and the same in every
  worker), with no shared random state between threads.
- `ShadowRunner(max_queue, workers)` runs the debates on its own threads from a bounded queue.
  `submit` never waits: a full queue drops the debate and counts it. Each job returns whether
  the debate changed the answer (or None when it could not tell); the runner counts debates
  submitted, run, dropped, failed, changed and abandoned (`SHADOW_EVENTS`, an `EventCounts`),
  which the metrics hear and `/v1/imad/stats` reads. `abandon` stops it within a deadline (a
  server's shutdown): the queued debates are abandoned, the running ones cancelled.
- `shadow_debate_job(pipeline, answer, completion_id, log)` is the job `imad serve` and `imad
  ask` submit: the debate the shadow decision skipped, its answer and tokens amended into the
  decision's log row (`debate_answer`, `shadow_debate`, the debate's tokens), and whether it
  changed the served single answer.
"""

from __future__ import annotations

import hashlib
import logging
import math
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from imad.errors import ConfigError
from imad.event_counts import EventCounts, Listener

logger = logging.getLogger("imad.shadow")

RATE_FLAG = "--shadow-debate-rate"
SEED_FLAG = "--shadow-seed"
MAX_SHADOW_SEED = 2**32 - 1
"""numpy's seed range, as the training record's split_seed: a count past it is refused."""
SHADOW_ONLY = "applies to shadow mode, which --shadow turns on: add --shadow or drop this flag"
MAX_SHADOW_QUEUE = 100_000
MAX_SHADOW_WORKERS = 64
SHADOW_EVENTS = ("submitted", "run", "dropped", "failed", "changed", "abandoned")
"""The shadow runner's counts, in the order `/v1/imad/stats` shows them."""
_STOP = object()


def check_shadow_flags(shadow: bool, rate: float, seed: int) -> None:
    """A shadow debate rate or seed only means something in shadow mode: ConfigError naming the
    flag when one is set without `--shadow` (a share of debates would silently not run)."""
    if shadow:
        return
    for flag, given in ((RATE_FLAG, rate != 0.0), (SEED_FLAG, seed != 0)):
        if given:
            raise ConfigError(flag, SHADOW_ONLY)


class ShadowSampler:
    """Which requests also get a shadow debate: a seeded share `rate` of completion ids."""

    def __init__(self, rate: float, seed: int = 0) -> None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) \
                or not 0.0 <= rate <= 1.0:
            raise ConfigError(RATE_FLAG, f"must be a number in [0, 1], got {rate!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SHADOW_SEED:
            raise ConfigError("seed", f"must be an integer in [0, 2**32), got {seed!r}")
        self.rate = float(rate)
        self.seed = seed

    def chosen(self, completion_id: str) -> bool:
        """True for about `rate` of all ids; the same answer for the same id and seed."""
        if self.rate <= 0.0:
            return False
        digest = hashlib.sha256(f"{self.seed}:{completion_id}".encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest[:8], "big") / 2.0**64 < self.rate


class ShadowRunner:
    """Runs shadow debates on background threads from a bounded queue (never on a request)."""

    def __init__(self, max_queue: int = 64, workers: int = 1, *,
                 on_count: Listener | None = None) -> None:
        for name, value, high in (("max_queue", max_queue, MAX_SHADOW_QUEUE),
                                  ("workers", workers, MAX_SHADOW_WORKERS)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise ConfigError(f"shadow {name}", f"must be an integer in [1, {high:,}], got {value!r}")
        self.stats = EventCounts(SHADOW_EVENTS, on_count=on_count)
        """What became of the debates handed over (`SHADOW_EVENTS`); `on_count`, the server's
        metrics, hears each change, and an exception it raises goes on to the caller."""
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue(maxsize=max_queue)
        self._closed = False
        self._abandoned = False
        self._busy = 0
        """Debates running now."""
        """Set by `abandon`: what a running debate does after it is not counted."""
        self._threads = [threading.Thread(target=self._work, name=f"imad-shadow-{index}", daemon=True)
                         for index in range(workers)]
        for thread in self._threads:
            thread.start()

    def submit(self, job: Callable[[], bool | None]) -> bool:
        """Queue a debate; False (counted as dropped) when the queue is full or the runner closed."""
        self.stats.add("submitted")
        with self._lock:
            closed = self._closed
        if closed:
            self.stats.add("dropped")
            return False
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            self.stats.add("dropped")
            return False
        return True

    def join(self) -> None:
        """Wait until every queued debate has run (tests, and a graceful shutdown)."""
        self._queue.join()

    def close(self, *, wait: bool = True) -> None:
        """Stop taking debates; with `wait`, finish the queued ones first."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if not wait:
            self._discard_queued("dropped")
        for _ in self._threads:
            self._queue.put(_STOP)
        for thread in self._threads:
            thread.join()

    def abandon(self, timeout_s: float, cancel: Callable[[], None]) -> int:
        """Stop within `timeout_s`: the queued debates are abandoned at once, the running ones
        may finish until then, and `cancel()` stops those still running at their next LLM call
        (their threads are daemons: nobody waits for the call in flight). The number abandoned,
        each counted as `abandoned`."""
        with self._lock:
            if self._closed:
                return 0
            self._closed = True
        abandoned = self._discard_queued("abandoned")
        for _ in self._threads:
            self._queue.put(_STOP)
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            running = self._busy
            self._abandoned = running > 0
        if running:
            cancel()
            self.stats.add("abandoned", running)
        return abandoned + running

    def _discard_queued(self, event: str) -> int:
        discarded = 0
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                if discarded:
                    self.stats.add(event, discarded)
                return discarded
            self._queue.task_done()
            discarded += job is not _STOP

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is _STOP:
                    return
                with self._lock:
                    self._busy += 1
                try:
                    self._run(job)
                finally:
                    with self._lock:
                        self._busy -= 1
            finally:
                self._queue.task_done()

    def _run(self, job: Callable[[], bool | None]) -> None:
        try:
            changed = job()
        except Exception as error:  # a failed shadow debate never reaches a user: count, log
            with self._lock:
                if self._abandoned:  # cancelled by `abandon`, which counted it
                    return
            if self.stats.add("failed") == 1:
                logger.warning("a shadow debate failed (%s: %s); later failures are only counted",
                               type(error).__name__, error)
            return
        with self._lock:
            if self._abandoned:
                return
        self.stats.add("run")
        if changed:
            self.stats.add("changed")


def shadow_debate_job(pipeline: Any, answer: Any, completion_id: str, log: Any | None, *,
                      on_tokens: Callable[[int, int], None] | None = None) -> Callable[[], bool | None]:
    """The shadow debate of one served `PipelineAnswer` (of a shadow `imad.Pipeline`), as a job
    for `ShadowRunner.submit`: it runs `pipeline.debate_in_shadow(answer)`, amends the row
    `completion_id` of the decision log `log` (None: no log) with the debate's answer and
    tokens, tells `on_tokens(prompt, completion)` what the debate spent (the server's token
    counter: shadow debates are paid for like any other call), and returns whether the debate's
    answer differs from the served one (None when the debate gave no answer)."""

    def job() -> bool | None:
        debate = pipeline.debate_in_shadow(answer)
        if on_tokens is not None:
            on_tokens(debate.prompt_tokens, debate.completion_tokens)
        if log is not None:
            log.amend({"response_id": completion_id, "debate_answer": debate.final_answer or None,
                       "shadow_debate": True, "debate_prompt_tokens": debate.prompt_tokens,
                       "debate_completion_tokens": debate.completion_tokens})
        if not debate.final_answer:
            return None
        return debate.final_answer != answer.answer

    return job
