"""Scores of concurrent requests computed together: one `nlp.pipe` and one forward per batch.

Each request's pipeline runs in its own worker thread and calls the batcher as its scorer
(`Pipeline(scorer=…)`); the call blocks that thread until its batch is done. The batcher has
one or more lanes, each a thread with its own scorer (by default one of the server's scoring
processes, `imad.serve.scoring.processes`, so that this work runs outside the server's GIL). A
free lane takes the first waiting job, collects more until `max_batch` are waiting or `window_s`
has passed, whichever comes first, and scores them with one `Router.features_scored` (features
and the network's probes of the whole batch, sent back as arrays; each caller builds its own
`RouterScore`). The window is not waited out once the batch holds every caller that could
still come (`expected()`, the server's running pipelines): a lone request never waits for
company. While the lanes are busy the next batch fills up by itself, so under load batches grow
without any extra wait; with two lanes a batch is scored while the other lane still holds its
own, so it does not wait behind it when there are cores to spare (at 32 clients on 2 cores the
server's own time per request fell from 57–61 to 41–44 ms, benchmarks/README.md). Debate calls of
other requests never wait for it: only scoring goes through the lanes. Scores are bit-identical
to `Router.score` of each answer alone, whichever lane and batch (tests/serve/test_batcher.py
checks it). A batch that fails — one bad answer, or a scoring process that died — is scored
again one answer at a time in its lane's thread, so each caller gets its own score or its own
error.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from imad import tracing
from imad.critique.schema import CritiqueResponse
from imad.decide import RouterScore
from imad.question import Question
from imad.router import Router
from imad.router.router import question_id, question_text
from imad.router.score import ScoredRows
from imad.serve.logs import log_event

BatchScorer = Callable[[Sequence[str], Sequence[CritiqueResponse]], ScoredRows]
"""Scores a batch of parsed answers (question texts, responses): `Router.features_scored` or a
`ProcessScorer` running it in a scoring process."""

DEFAULT_MAX_BATCH = 64
DEFAULT_WINDOW_S = 0.005
READY_TIMEOUT_S = 300.0
"""Longest wait for the scorer to warm up at start-up (loading spaCy takes seconds, not minutes)."""


@dataclass
class _Job:
    question: Question
    response: CritiqueResponse
    done: threading.Event = field(default_factory=threading.Event)
    rows: ScoredRows | None = None
    row: int = 0
    score: RouterScore | None = None
    """Set instead of `rows` when the job was scored on its own."""
    batch_size: int = 0
    error: BaseException | None = None


class ScoreBatcher:
    """A scorer that batches the calls of concurrent threads (see the module docstring)."""

    def __init__(self, router: Router, *, max_batch: int = DEFAULT_MAX_BATCH,
                 window_s: float = DEFAULT_WINDOW_S, expected: Callable[[], int] | None = None,
                 lanes: Sequence[BatchScorer] = (),
                 close_scorer: Callable[[], None] | None = None,
                 wait_ready: Callable[[float], None] | None = None,
                 on_batch: Callable[[int, BaseException | None], None] | None = None) -> None:
        """`expected`: how many callers may be scoring now (None: unknown, always wait).
        `lanes`: the scorer of each lane, one batch at a time each (default: one lane scoring
        with `router.features_scored` in its own thread); `close_scorer` is called once every
        lane has stopped; `wait_ready(timeout_s)` blocks until the scorers are warm;
        `on_batch(size, error)` hears of every batch (the server's metrics)."""
        self.router = router
        self.lanes: tuple[BatchScorer, ...] = tuple(lanes) or (router.features_scored,)
        self._close_scorer = close_scorer
        self._wait_ready = wait_ready
        self._on_batch = on_batch
        self.max_batch = max_batch
        self.window_s = window_s
        self.expected = expected
        self.batch_sizes: list[int] = []
        """Size of each batch scored so far (for tests and benchmarks)."""
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()  # no job is queued behind the stop signals
        self._threads = [threading.Thread(target=self._serve, args=(scorer,), daemon=True,
                                          name=f"imad-scoring-{lane}")
                         for lane, scorer in enumerate(self.lanes)]
        for thread in self._threads:
            thread.start()

    def __call__(self, question: Question, response: CritiqueResponse) -> RouterScore:
        """The router's score of one parsed answer, scored in a batch with those of the other
        threads waiting now (an `imad.features` span covers the wait)."""
        with tracing.features_span(self.router.feature_schema_version, len(self.router.feature_names)):
            job = _Job(question, response)
            with self._lock:
                if self._closed:  # a pipeline that outlived the server's shutdown
                    return self.router.score(question, response)
                self._jobs.put(job)
            job.done.wait()
            tracing.annotate({"imad.features.batch_size": job.batch_size})
        if job.error is not None:
            raise job.error
        if job.score is not None:
            return job.score
        assert job.rows is not None  # set with done unless error or score is
        return job.rows.score(job.row, question_id(question))

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Block until the scorer can score at full speed (its process warm)."""
        if self._wait_ready is not None:
            self._wait_ready(timeout_s)

    def close(self) -> None:
        """Stop the lanes once the jobs already waiting are done, then the scorers; later calls
        score in their own thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in self._threads:
                self._jobs.put(None)  # one stop signal per lane, behind every job
        for thread in self._threads:
            thread.join()
        if self._close_scorer is not None:
            self._close_scorer()

    def _serve(self, scorer: BatchScorer) -> None:
        """One lane: collect a batch, score it with this lane's scorer, until a stop signal."""
        while True:
            first = self._jobs.get()
            if first is None:
                return
            batch, stop = self._collect(first)
            self._score(batch, scorer)
            if stop:
                return

    def _collect(self, first: _Job) -> tuple[list[_Job], bool]:
        batch = [first]
        deadline = time.monotonic() + self.window_s
        while len(batch) < self.max_batch:
            if self.expected is not None and len(batch) >= self.expected() and self._jobs.empty():
                break  # nobody else can join this batch: no window to wait out
            try:
                job = self._jobs.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if job is None:
                return batch, True
            batch.append(job)
        return batch, False

    def _score(self, batch: list[_Job], scorer: BatchScorer) -> None:
        self.batch_sizes.append(len(batch))
        for job in batch:
            job.batch_size = len(batch)
        try:
            rows = scorer([question_text(job.question) for job in batch],
                          [job.response for job in batch])
            if len(rows) != len(batch):
                raise RuntimeError(f"{len(rows)} scores for a batch of {len(batch)}")
        except Exception as error:  # one bad answer or a dead process: each job on its own
            log_event("score_batch_failed", level=logging.WARNING, size=len(batch),
                      error=f"{type(error).__name__}: {error}")
            self._observe(len(batch), error)
            for job in batch:
                try:
                    job.score = self.router.score(job.question, job.response)
                except Exception as job_error:
                    job.error = job_error
                job.done.set()
            return
        self._observe(len(batch), None)
        for row, job in enumerate(batch):
            job.rows, job.row = rows, row
            job.done.set()

    def _observe(self, size: int, error: BaseException | None) -> None:
        if self._on_batch is not None:
            try:
                self._on_batch(size, error)
            except Exception:  # a metric must never cost an answer
                log_event("score_batch_metrics_failed", level=logging.WARNING, exc_info=True)
