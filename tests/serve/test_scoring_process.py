"""The scoring process: real child processes, bit-identical scores, and what happens when one dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import numpy as np
import psutil
import pytest

from imad.critique.schema import CritiqueResponse
from imad.question import Question
from imad.router import Router
from imad.serve.factory import WARM_UP_RESPONSE
from imad.serve.scoring.batcher import ScoreBatcher
from imad.serve.scoring.processes import CHILD_NICENESS, ProcessScorer, ScoringProcessError
from tests.router.router_helpers import make_router
from tests.support.batching import call_together

pytest.importorskip("spacy")

REPO_ROOT = Path(__file__).resolve().parents[2]


def response(index: int) -> CritiqueResponse:
    return CritiqueResponse(
        initial_answer=str(index), initial_reasoning=f"The tag after the hash sign is {index}.",
        critique="Perhaps I misread a digit, but nothing in the question points elsewhere.",
        alternative_answer=str(index + 1), final_answer=str(index),
        confidence_initial=0.5 + index / 100, confidence_critique=0.3)


def texts(indices: range) -> list[str]:
    return [f"Which number is tagged #{index}?" for index in indices]


def wait_until_gone(pid: int, limit_s: float = 60.0) -> bool:
    """Whether process `pid` has ended within `limit_s` (a bound for a broken test, not a timing)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def router() -> Router:
    return make_router(seed=5)


@pytest.fixture(scope="module")
def scorer(router):
    process = ProcessScorer(router, warm_up=WARM_UP_RESPONSE)
    process.wait_ready(timeout_s=300)
    yield process
    process.close()


def test_the_child_scores_bit_identically_to_the_server_process(router, scorer):
    indices = range(7)
    responses = [response(index) for index in indices]
    in_child = scorer(texts(indices), responses)
    in_server = router.features_scored(texts(indices), responses)
    assert scorer.pid is not None and scorer.pid != os.getpid()
    # a lower priority than the server's, so its short steps are not queued behind a batch
    assert psutil.Process(scorer.pid).nice() == min(19, os.nice(0) + CHILD_NICENESS)
    for name in ("vectors", "p", "raw", "uncertainty", "effects"):
        assert np.array_equal(getattr(in_child, name), getattr(in_server, name)), name
    assert in_child.feature_names == in_server.feature_names


def test_a_batcher_on_the_scoring_process_gives_each_caller_its_own_score(router, scorer):
    batcher = ScoreBatcher(router, max_batch=5, window_s=60, lanes=[scorer])
    scores = call_together(batcher, {index: (Question(texts(range(index, index + 1))[0]), response(index))
                                     for index in range(5)})
    batcher.close()
    assert batcher.batch_sizes == [5]
    for index in range(5):
        assert scores[index] == router.score(texts(range(index, index + 1))[0], response(index))


def test_a_killed_child_fails_only_its_batch_and_the_next_batch_gets_a_new_one(router):
    scorer = ProcessScorer(router)
    try:
        scorer(texts(range(1)), [response(0)])  # the child is up
        first = scorer.pid
        os.kill(first, signal.SIGKILL)
        assert wait_until_gone(first)
        with pytest.raises(ScoringProcessError, match="the scoring process died"):
            scorer(texts(range(2)), [response(0), response(1)])
        rows = scorer(texts(range(2)), [response(0), response(1)])
        assert scorer.restarts == 1 and scorer.pid not in (None, first)
        assert np.array_equal(rows.p, router.features_scored(texts(range(2)), [response(0), response(1)]).p)
    finally:
        scorer.close()
    with pytest.raises(ScoringProcessError, match="closed"):
        scorer(texts(range(1)), [response(0)])


def test_a_scorer_not_warm_in_time_is_a_typed_error(router):
    scorer = ProcessScorer(router, warm_up=WARM_UP_RESPONSE)
    try:
        with pytest.raises(ScoringProcessError, match="not ready after"):
            scorer.wait_ready(timeout_s=1e-6)
    finally:
        scorer.close()


def test_the_child_ends_when_the_server_process_is_killed(tmp_path):
    """A server killed with SIGKILL cannot close its scoring process; the child notices."""
    script = textwrap.dedent("""
        import sys
        from tests.router.router_helpers import make_router
        from imad.serve.scoring.processes import ProcessScorer
        from imad.serve.factory import WARM_UP_RESPONSE
        scorer = ProcessScorer(make_router(seed=6), warm_up=WARM_UP_RESPONSE)
        scorer.wait_ready(300)
        print(scorer.pid, flush=True)
        sys.stdin.read()  # wait to be killed
    """)
    server = subprocess.Popen([sys.executable, "-c", script], cwd=REPO_ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        child = int(server.stdout.readline())
        assert psutil.pid_exists(child)
        server.kill()
        server.wait(60)
        assert wait_until_gone(child), "the scoring process outlived its server"
    finally:
        server.kill()


def test_a_server_whose_scoring_process_is_killed_answers_every_request():
    """End to end, two scoring processes: requests before, across and after the death of one
    child all get 200 and their own answer; the server starts a new child for that lane, the
    other lane's child lives on, and no request is lost or crossed."""
    pytest.importorskip("fastapi")
    from imad.serve import BackgroundServer, ServeSettings, create_app
    from imad.serve.metrics import sample_values
    from tests.support.serving import echo_factory, run_load

    settings = ServeSettings(max_concurrency=8, api_key="k", scoring_processes=2)
    app = create_app(settings, echo_factory())
    process, other = app.state.runner.scorer.lanes
    server = BackgroundServer(app, settings).start()
    try:
        health = httpx.get(server.base_url.removesuffix("/v1") + "/health").json()
        assert health["scoring_processes"] == 2
        before = run_load(server.base_url, n=40, concurrency=8, api_key="k")
        first, untouched = process.pid, other.pid
        assert None not in (first, untouched) and first != untouched
        os.kill(first, signal.SIGKILL)
        assert wait_until_gone(first)
        after = run_load(server.base_url, n=40, concurrency=8, api_key="k")
        second = process.pid
        assert other.pid == untouched and other.restarts == 0
        metrics = httpx.get(server.base_url.removesuffix("/v1") + "/metrics",
                            headers={"Authorization": "Bearer k"}).text
    finally:
        server.stop(timeout_s=15)
    for report in (before, after):
        assert report.answered == 40 and report.wrong_answers == [] and report.duplicated_ids == 0
    assert process.restarts == 1 and second not in (None, first)
    assert second is not None and wait_until_gone(second)  # the server's shutdown ended both
    assert wait_until_gone(untouched)
    failures = dict((labels["type"], value)
                    for labels, value in sample_values(metrics, "imad_score_batch_failures_total"))
    assert failures == {"ScoringProcessError": 1.0}  # the one batch the dead child held
    [(_, scored)] = sample_values(metrics, "imad_score_batch_size_sum")
    assert scored == 80  # every answer went through a batch once
