"""Shadow debates off the request path (issue 32 item 1): the seeded sampler and the bounded
runner. A race is forced with events, never a sleep."""

from __future__ import annotations

import logging
import threading

import pytest

from imad.errors import ConfigError
from imad.shadow import ShadowRunner, ShadowSampler


def test_the_sampler_picks_a_seeded_share_independent_of_anything_else():
    ids = [f"chatcmpl-{index}" for index in range(20_000)]
    picked = [ShadowSampler(0.2, seed=7).chosen(i) for i in ids]
    assert abs(sum(picked) / len(ids) - 0.2) < 0.015  # binomial sd 0.0028: 5 sd
    assert picked == [ShadowSampler(0.2, seed=7).chosen(i) for i in ids]  # reproducible
    assert picked != [ShadowSampler(0.2, seed=8).chosen(i) for i in ids]
    assert not any(ShadowSampler(0.0).chosen(i) for i in ids[:100])
    assert all(ShadowSampler(1.0).chosen(i) for i in ids[:100])


@pytest.mark.parametrize("rate", [-0.1, 1.5, float("nan"), float("inf"), "0.2", True, None])
def test_a_bad_rate_names_the_flag(rate):
    with pytest.raises(ConfigError, match=r"--shadow-debate-rate: must be a number in \[0, 1\]"):
        ShadowSampler(rate)


@pytest.mark.parametrize(("kwargs", "message"), [({"max_queue": 0}, "shadow max_queue"),
                                                  ({"workers": 0}, "shadow workers"),
                                                  ({"workers": 65}, "shadow workers"),
                                                  ({"max_queue": 2.0}, "shadow max_queue")])
def test_bad_runner_sizes(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ShadowRunner(**kwargs)


def test_a_full_queue_drops_and_counts_and_submit_never_waits():
    started, release = threading.Event(), threading.Event()

    def slow() -> bool:
        started.set()
        release.wait()
        return True

    runner = ShadowRunner(max_queue=2, workers=1)
    assert runner.submit(slow) is True
    started.wait()  # the worker holds the first debate; the queue has room for two more
    results = [runner.submit(lambda: False) for _ in range(4)]
    assert results == [True, True, False, False]
    release.set()
    runner.close()
    assert runner.stats.snapshot() == {"submitted": 5, "run": 3, "dropped": 2, "failed": 0, "changed": 1,
                                      "abandoned": 0}
    assert runner.submit(lambda: True) is False and runner.stats["dropped"] == 3


def test_a_failing_debate_is_counted_and_logged_once(caplog):
    def boom() -> bool:
        raise RuntimeError("upstream went away")

    runner = ShadowRunner(max_queue=8)
    with caplog.at_level(logging.WARNING, "imad.shadow"):
        for _ in range(3):
            runner.submit(boom)
        runner.submit(lambda: None)
        runner.close()
    assert (runner.stats["failed"], runner.stats["run"], runner.stats["changed"]) == (3, 1, 0)
    assert len(caplog.records) == 1 and "upstream went away" in caplog.records[0].getMessage()


def test_close_without_wait_discards_the_queued_debates():
    started, release = threading.Event(), threading.Event()
    runner = ShadowRunner(max_queue=4)
    runner.submit(lambda: (started.set(), release.wait(), True)[-1])
    started.wait()
    runner.submit(lambda: True)
    runner.submit(lambda: True)
    discard = runner._discard_queued

    def discard_then_release(event: str) -> int:  # the running debate ends only after the discard
        discarded = discard(event)
        release.set()
        return discarded

    runner._discard_queued = discard_then_release
    runner.close(wait=False)
    assert runner.stats["run"] == 1 and runner.stats["dropped"] == 2


def test_abandon_leaves_the_queue_cancels_the_running_debate_and_counts_both():
    """A server's shutdown: the queued debates are not run, the running one is cancelled once
    the deadline (here 0 s) has passed, and each counts as abandoned, never as run."""
    started, release, cancelled = threading.Event(), threading.Event(), threading.Event()
    runner = ShadowRunner(max_queue=8)
    runner.submit(lambda: (started.set(), release.wait(), True)[-1])
    started.wait()
    ran = []
    for _ in range(5):
        runner.submit(lambda: ran.append(1) or True)

    def cancel() -> None:
        cancelled.set()
        release.set()  # the cancelled debate stops at its next call: here, at once

    assert runner.abandon(0.0, cancel=cancel) == 6
    assert cancelled.is_set() and ran == []
    assert (runner.stats["abandoned"], runner.stats["run"], runner.stats["dropped"]) == (6, 0, 0)
    assert runner.submit(lambda: True) is False  # closed: a late offer is dropped
    assert runner.abandon(0.0, cancel=cancel) == 0


def test_abandon_with_nothing_running_cancels_nothing():
    runner = ShadowRunner(max_queue=2)
    assert runner.abandon(0.0, cancel=lambda: pytest.fail("nothing ran")) == 0
    assert runner.stats["abandoned"] == 0


def test_a_failing_listener_reaches_the_submitter_and_nothing_is_queued():
    def broken(event: str, count: int) -> None:
        raise RuntimeError("metrics are down")

    runner = ShadowRunner(max_queue=1, on_count=broken)
    with pytest.raises(RuntimeError, match="metrics are down"):
        runner.submit(lambda: True)
    runner.close()
    assert runner.stats.snapshot() == {"submitted": 1, "run": 0, "dropped": 0, "failed": 0, "changed": 0,
                                      "abandoned": 0}
