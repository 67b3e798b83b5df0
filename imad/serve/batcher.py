"""Features of concurrent requests extracted together: one `nlp.pipe` over whatever is waiting.

Each request's pipeline runs in its own worker thread and calls the batcher as its featurizer
(`imad.router.featurize.Featurizer`); the call blocks that thread until its batch is done. One
batcher thread takes the first waiting job, collects more until `max_batch` are waiting or
`window_s` has passed, whichever comes first, and extracts them with one
`featurize.extract_batch` per schema version. The window is not waited out once the batch holds
every caller that could still come (`expected()`, the server's running pipelines): a lone
request never waits for company. While a batch runs, the next one fills up by itself, so under
load batches grow without any extra wait. Debate calls of other requests never wait for it:
only featurization goes through this thread. Features are bit-identical to one-by-one extraction (`features.extract` is a batch
of one; tests/serve/test_batcher.py checks it). A batch that fails is extracted again one job at
a time, so each caller gets its own vector or its own error.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from imad import tracing
from imad.critique.schema import CritiqueResponse
from imad.router import featurize

DEFAULT_MAX_BATCH = 64
DEFAULT_WINDOW_S = 0.005


@dataclass
class _Job:
    question: str
    response: CritiqueResponse
    schema_version: int
    done: threading.Event = field(default_factory=threading.Event)
    vector: np.ndarray | None = None
    batch_size: int = 0
    error: BaseException | None = None


class FeatureBatcher:
    """A featurizer that batches the calls of concurrent threads (see the module docstring)."""

    def __init__(self, *, max_batch: int = DEFAULT_MAX_BATCH, window_s: float = DEFAULT_WINDOW_S,
                 expected: Callable[[], int] | None = None) -> None:
        """`expected`: how many callers may be featurizing now (None: unknown, always wait)."""
        self.max_batch = max_batch
        self.window_s = window_s
        self.expected = expected
        self.batch_sizes: list[int] = []
        """Size of each batch extracted so far (for tests and benchmarks)."""
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()  # no job is queued behind the stop signal
        self._thread = threading.Thread(target=self._serve, name="imad-features", daemon=True)
        self._thread.start()

    def __call__(self, question: str, response: CritiqueResponse, schema_version: int) -> np.ndarray:
        job = _Job(question, response, schema_version)
        with self._lock:
            if self._closed:  # a pipeline that outlived the server's shutdown
                return featurize.extract(question, response, schema_version)
            self._jobs.put(job)
        job.done.wait()
        tracing.annotate({"imad.features.batch_size": job.batch_size})
        if job.error is not None:
            raise job.error
        assert job.vector is not None  # set with done unless error is
        return job.vector

    def close(self) -> None:
        """Stop the batcher thread once the jobs already waiting are done; later calls extract
        in their own thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._jobs.put(None)
        self._thread.join()

    def _serve(self) -> None:
        while True:
            first = self._jobs.get()
            if first is None:
                return
            batch, stop = self._collect(first)
            self._extract(batch)
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

    def _extract(self, batch: list[_Job]) -> None:
        self.batch_sizes.append(len(batch))
        for job in batch:
            job.batch_size = len(batch)
        for version in sorted({job.schema_version for job in batch}):
            jobs = [job for job in batch if job.schema_version == version]
            try:
                matrix = featurize.extract_batch([job.question for job in jobs],
                                                 [job.response for job in jobs], version,
                                                 batch_size=len(jobs))
            except Exception:  # one bad job: give each job its own vector or its own error
                for job in jobs:
                    try:
                        job.vector = featurize.extract(job.question, job.response, version)
                    except Exception as error:
                        job.error = error
                    job.done.set()
                continue
            for row, job in zip(matrix, jobs, strict=True):
                job.vector = row.copy()
                job.done.set()
