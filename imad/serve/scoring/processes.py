"""The server's scoring processes: features and router scores of each batch outside its GIL.

Extracting 41 features (spaCy's parse, textstat, the lexicons) and scoring the probes of every
answer is most of a kept request's CPU. Run in the server process, it holds the GIL that the
event loop and the upstream calls need, so one server process could not use a second core. The
batcher (`imad.serve.scoring.batcher`) hands each batch to one child process instead (the standard
library's `ProcessPoolExecutor`, one worker, "spawn" start so no thread's lock is copied), which
holds its own copy of the router, received once at start, and sends back arrays (`ScoredRows`).
Scores are bit-identical to scoring in the server (same code, same weights; `Router.scored_rows`
gives an answer the same bits in any batch). `ScoringProcesses` starts several such children, one
per lane of the batcher.

A child runs at a lower scheduling priority (niceness + `CHILD_NICENESS`): its batches take tens
of milliseconds of CPU, while the server process's steps (reading a request, an upstream reply)
take a fraction of one and each holds up a request, so on a busy machine those go first. Its
warm-up (loading spaCy and the router, seconds of CPU) runs before that, at the server's
priority: no request waits behind it, and niced on a busy machine it took 12 s instead of 1-2 s
(`benchmarks/bench_serve_startup.py --busy 2`), holding the server's start or a lane's return.

A child that dies (killed, out of memory) breaks only the batch it held: that batch raises
`ScoringProcessError` (the batcher then scores its answers in the server process). A child
that holds a batch longer than its deadline (`SCORE_DEADLINE_S`, at most the server's
`--request-timeout`; `START_DEADLINE_S` for a first batch that also loads the child) counts
as hung — stopped, or stuck in a native call — and is killed: a hung child would otherwise
hold its batch's requests, and so their slots, for ever. Either way
a replacement starts at once and warms up; until it is warm the lane scores in the server
process, so no request waits for a child to load. A child ends with its parent
(`imad.serve.scoring.lifeline`), and `close` kills one that does not end within `CLOSE_TIMEOUT_S`.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from imad.critique.schema import CritiqueResponse
from imad.errors import ImadError
from imad.router import Router
from imad.router.score import ScoredRows
from imad.serve.logs import log_event
from imad.serve.scoring.lifeline import exit_now, watch_parent

_router: Router | None = None
"""The child's router, set once by `_start_child`."""

WARM_UP_QUESTION = "Is the scoring process warm?"
CHILD_NICENESS = 5
"""Added to a scoring process's niceness (Unix): under CFS a weight about 3x below the server's."""
SCORE_DEADLINE_S = 15.0
"""Longest a scoring process may hold one batch before it counts as hung and is killed (a batch
of 64 answers takes well under a second; the server uses min(this, --request-timeout))."""
START_DEADLINE_S = 300.0
"""The deadline of a child's first batch when it had no warm-up answer: that batch loads spaCy
and the router too (seconds, more on a busy machine)."""
CLOSE_TIMEOUT_S = 5.0
"""How long `close` waits for a child to finish its batch and exit before killing it."""


class ScoringProcessError(ImadError):
    """The scoring process died while it held a batch (the batch is scored in the server)."""


class ProcessScorer:
    """`Router.features_scored` of one router, run in a child process that is replaced when it
    dies or hangs."""

    def __init__(self, router: Router, warm_up: CritiqueResponse | None = None,
                 deadline_s: float = SCORE_DEADLINE_S) -> None:
        """Start the child now; with `warm_up`, have it load spaCy and score one answer before
        the first batch arrives (`wait_ready`), so no request waits for the loading."""
        self.router = router
        self.warm_up = warm_up
        self.deadline_s = deadline_s
        self.restarts = 0
        """Children started after the first one died or hung (for tests and the log)."""
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._warming: Future[ScoredRows] | None = None
        """The current child's warm-up answer, until it is scored."""
        self._loaded = False
        """Whether the current child has scored a batch (then `deadline_s` applies)."""
        self._running = 0
        """Batches being scored now (`close` waits for them)."""
        self._closed = False
        self._start()

    def wait_ready(self, timeout_s: float) -> None:
        """Block until the first child has scored its warm-up answer; `ScoringProcessError` if
        it failed or took longer than `timeout_s` (a server then refuses to start)."""
        warming = self._warming
        if warming is None:
            return
        try:
            warming.result(timeout=timeout_s)
        except TimeoutError as error:
            raise ScoringProcessError(f"the scoring process was not ready after {timeout_s:g} s") from error
        except Exception as error:
            raise ScoringProcessError(f"the scoring process could not score its warm-up answer: "
                                      f"{type(error).__name__}: {error}") from error

    def __call__(self, texts: Sequence[str], responses: Sequence[CritiqueResponse]) -> ScoredRows:
        """The scores of the batch; `ScoringProcessError` when the child died holding it or
        held it past the deadline (it is then killed and replaced)."""
        pool, warm = self._pool_for_batch()
        if not warm:  # a replacement still loading: score here rather than wait for it
            return self.router.features_scored(list(texts), list(responses))
        deadline_s = self.deadline_s if self._loaded else max(self.deadline_s, START_DEADLINE_S)
        with self._lock:
            self._running += 1
        try:
            future = pool.submit(_features_scored, list(texts), list(responses))
            rows = future.result(timeout=deadline_s)
        except TimeoutError:
            pid = self.pid
            self._replace(pool, kill=True)
            log_event("scoring_process_hung", level=logging.WARNING, pid=pid, deadline_s=deadline_s)
            raise ScoringProcessError(f"the scoring process held its batch longer than "
                                      f"{deadline_s:g} s; it was killed and replaced") from None
        except BrokenProcessPool as error:
            self._replace(pool)
            log_event("scoring_process_failed", level=logging.WARNING,
                      reason=str(error) or type(error).__name__)
            raise ScoringProcessError(f"the scoring process died: {error or type(error).__name__}") from None
        finally:
            with self._lock:
                self._running -= 1
        with self._lock:
            self._loaded = self._loaded or self._pool is pool
        return rows

    def close(self) -> None:
        """End the child after the batch it holds (killed after `CLOSE_TIMEOUT_S`); an idle
        child is ended at once (it holds nothing, and its interpreter's own exit, unloading
        torch and spaCy, would take seconds on a busy machine)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
            busy = self._running > 0
        if pool is not None:
            _end_pool(pool, CLOSE_TIMEOUT_S if busy else 0.0)

    def _start(self) -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_child,
                                   initargs=(self.router, self.warm_up is None))
        self._loaded = self.warm_up is not None  # warm before its first batch (`_pool_for_batch`)
        if self.warm_up is not None:
            self._warming = pool.submit(_warm_up, [WARM_UP_QUESTION], [self.warm_up])
            self._warming.add_done_callback(_retrieve)
        self._pool = pool
        return pool

    def _pool_for_batch(self) -> tuple[ProcessPoolExecutor, bool]:
        """The current child's pool, and whether it is warm."""
        with self._lock:
            if self._closed:
                raise ScoringProcessError("the scoring process is closed")
            pool = self._pool if self._pool is not None else self._start()
            return pool, self._warming is None or self._warming.done()

    def _replace(self, pool: ProcessPoolExecutor, *, kill: bool = False) -> None:
        """End `pool`'s child (SIGKILL when `kill`: it does not answer) and start another."""
        with self._lock:
            current = self._pool is pool and not self._closed
            if current:
                self._pool = None
                self.restarts += 1
                self._start()
        if kill:
            _kill_children(pool)
        pool.shutdown(wait=False, cancel_futures=True)

    @property
    def pid(self) -> int | None:
        """The child's process id, once it has started (for tests)."""
        return next(iter(_children(self._pool)), None)


class ScoringProcesses:
    """`count` scoring processes of one router, started together and closed together."""

    def __init__(self, router: Router, count: int, warm_up: CritiqueResponse | None = None,
                 deadline_s: float = SCORE_DEADLINE_S) -> None:
        if count < 1:
            raise ValueError(f"scoring processes: need at least one, got {count}")
        self.scorers = tuple(ProcessScorer(router, warm_up=warm_up, deadline_s=deadline_s)
                             for _ in range(count))

    def wait_ready(self, timeout_s: float) -> None:
        """Block until every child has scored its warm-up answer (they warm up in parallel, so
        `timeout_s` bounds the whole wait); `ScoringProcessError` otherwise."""
        deadline = time.monotonic() + timeout_s
        for scorer in self.scorers:
            scorer.wait_ready(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        """End every child after the batch it holds."""
        for scorer in self.scorers:
            scorer.close()


def _children(pool: ProcessPoolExecutor | None) -> dict[int, multiprocessing.process.BaseProcess]:
    """The live child processes of a pool, by process id."""
    return dict(getattr(pool, "_processes", None) or {})


def _kill_children(pool: ProcessPoolExecutor) -> None:
    _kill(_children(pool))


def _kill(children: dict[int, multiprocessing.process.BaseProcess]) -> None:
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # a stopped process too: SIGKILL needs no cooperation


def _end_pool(pool: ProcessPoolExecutor, timeout_s: float) -> None:
    """Shut `pool` down, waiting at most `timeout_s` for its child to exit, then kill it (at
    once when `timeout_s` is 0)."""
    children = _children(pool)
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    sentinels = [child.sentinel for child in children.values()]
    if not timeout_s:
        _kill(children)
    elif sentinels and len(multiprocessing.connection.wait(sentinels, timeout_s)) < len(sentinels):
        log_event("scoring_process_killed", level=logging.WARNING, pids=sorted(children),
                  reason=f"still running {timeout_s:g} s after close")
        _kill(children)
    if manager is not None:  # once it has ended, the pool's queues are freed and their
        manager.join(CLOSE_TIMEOUT_S)  # semaphores unregistered (no "leaked semaphore" warning)


def _retrieve(future: Future) -> None:
    """Read a warm-up's outcome nobody else waits for (its failure shows on the first batch)."""
    if not future.cancelled():
        future.exception()


def use_one_torch_thread() -> None:
    """One torch thread per server process and per scoring process, unless OMP_NUM_THREADS says
    otherwise.

    A server runs many requests at once, each scoring one tiny batch; torch's intra-op threads
    then only spin against each other and the other requests (measured with bench_serve.py:
    10.0 → 8.4 ms CPU per kept request at 32 clients). Concurrency comes from the requests, and
    a scoring process scores one batch at a time.
    """
    if "OMP_NUM_THREADS" not in os.environ:
        import torch

        torch.set_num_threads(1)


def _start_child(router: Router, yield_now: bool) -> None:
    """Set the child up; `yield_now`: lower its priority at once (no warm-up answer comes)."""
    global _router
    use_one_torch_thread()  # one batch at a time: more torch threads would only spin
    if yield_now:
        _yield_to_the_server()
    _router = router
    watch_parent(exit_now)  # a server killed with no chance to close us leaves no child behind


def _yield_to_the_server() -> None:
    if hasattr(os, "nice"):
        os.nice(CHILD_NICENESS)


def _warm_up(texts: list[str], responses: list[CritiqueResponse]) -> ScoredRows:
    """Score the warm-up answer at the server's priority, then yield to it (module docstring)."""
    try:
        return _features_scored(texts, responses)
    finally:
        _yield_to_the_server()


def _features_scored(texts: list[str], responses: list[CritiqueResponse]) -> ScoredRows:
    assert _router is not None, "the scoring process starts with its router"
    return _router.features_scored(texts, responses)
