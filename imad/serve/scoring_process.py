"""The server's scoring processes: features and router scores of each batch outside its GIL.

Extracting 41 features (spaCy's parse, textstat, the lexicons) and scoring the probes of every
answer is most of a kept request's CPU. Run in the server process, it holds the GIL that the
event loop and the upstream calls need, so one server process could not use a second core. The
batcher (`imad.serve.batcher`) hands each batch to one child process instead (the standard
library's `ProcessPoolExecutor`, one worker, "spawn" start so no thread's lock is copied), which
holds its own copy of the router, received once at start, and sends back arrays (`ScoredRows`).
Scores are bit-identical to scoring in the server (same code, same weights; `Router.scored_rows`
gives an answer the same bits in any batch). `ScoringProcesses` starts several such children, one
per lane of the batcher.

A child runs at a lower scheduling priority (niceness + `CHILD_NICENESS`): its batches take tens
of milliseconds of CPU, while the server process's steps (reading a request, an upstream reply)
take a fraction of one and each holds up a request, so on a busy machine those go first.

A child that dies (killed, out of memory) breaks only the batch it held: that batch raises
`ScoringProcessError` (the batcher then scores its answers in the server process) and the next
batch starts a new child.
"""

from __future__ import annotations

import multiprocessing
import os
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

_router: Router | None = None
"""The child's router, set once by `_start_child`."""

WARM_UP_QUESTION = "Is the scoring process warm?"
CHILD_NICENESS = 5
"""Added to a scoring process's niceness (Unix): under CFS a weight about 3x below the server's."""


class ScoringProcessError(ImadError):
    """The scoring process died while it held a batch (the batch is scored in the server)."""


class ProcessScorer:
    """`Router.features_scored` of one router, run in a child process that is restarted when it
    dies."""

    def __init__(self, router: Router, warm_up: CritiqueResponse | None = None) -> None:
        """Start the child now; with `warm_up`, have it load spaCy and score one answer before
        the first batch arrives (`wait_ready`), so no request waits for the loading."""
        self.router = router
        self.warm_up = warm_up
        self.restarts = 0
        """Children started after the first one died (for tests and the log)."""
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._warming: Future[ScoredRows] | None = None
        self._closed = False
        self._start()

    def wait_ready(self, timeout_s: float) -> None:
        """Block until the first child has scored its warm-up answer; `ScoringProcessError` if
        it failed or took longer than `timeout_s` (a server then refuses to start)."""
        warming, self._warming = self._warming, None
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
        """The scores of the batch; `ScoringProcessError` when the child died holding it."""
        pool = self._pool_for_batch()
        try:
            return pool.submit(_features_scored, list(texts), list(responses)).result()
        except BrokenProcessPool as error:
            self._drop(pool)
            log_event("scoring_process_failed", reason=str(error) or type(error).__name__)
            raise ScoringProcessError(f"the scoring process died: {error or type(error).__name__}") from error

    def close(self) -> None:
        """End the child after the batch it holds."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _start(self) -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_child, initargs=(self.router,))
        if self.warm_up is not None:
            self._warming = pool.submit(_features_scored, [WARM_UP_QUESTION], [self.warm_up])
        self._pool = pool
        return pool

    def _pool_for_batch(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise ScoringProcessError("the scoring process is closed")
            if self._pool is None:
                self.restarts += 1
                return self._start()
            return self._pool

    def _drop(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)

    @property
    def pid(self) -> int | None:
        """The child's process id, once it has started (for tests)."""
        pool = self._pool
        processes = getattr(pool, "_processes", None) or {}
        return next(iter(processes), None)


class ScoringProcesses:
    """`count` scoring processes of one router, started together and closed together."""

    def __init__(self, router: Router, count: int, warm_up: CritiqueResponse | None = None) -> None:
        if count < 1:
            raise ValueError(f"scoring processes: need at least one, got {count}")
        self.scorers = tuple(ProcessScorer(router, warm_up=warm_up) for _ in range(count))

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


def _start_child(router: Router) -> None:
    from imad.serve.server import use_one_torch_thread

    global _router
    use_one_torch_thread()  # one batch at a time: more torch threads would only spin
    if hasattr(os, "nice"):
        os.nice(CHILD_NICENESS)
    _router = router
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with_parent, args=(parent,), name="imad-parent-watch",
                         daemon=True).start()


def _exit_with_parent(parent: multiprocessing.process.BaseProcess) -> None:
    """End the child once the server process is gone (killed with no chance to close us), so a
    crashed server leaves no scoring process behind: blocks on the parent's sentinel."""
    parent.join()
    os._exit(0)


def _features_scored(texts: list[str], responses: list[CritiqueResponse]) -> ScoredRows:
    assert _router is not None, "the scoring process starts with its router"
    return _router.features_scored(texts, responses)
