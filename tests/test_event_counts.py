"""`EventCounts`: declared names only, exact sums from many threads, one listener call per
non-zero change, snapshots that are copies, and an explicit listener-failure policy."""

from __future__ import annotations

import threading

import pytest

from imad.errors import ImadError, UnknownEventError
from imad.event_counts import EventCounts

NAMES = ("run", "failed", "dropped_busy", "dropped_closed")


def test_increments_from_many_threads_sum_exactly():
    heard = []
    counts = EventCounts(NAMES, on_count=lambda event, n: heard.append((event, n)))
    threads, per_thread = 8, 2_000
    start = threading.Barrier(threads)

    def bump(index: int) -> None:
        start.wait()
        for _ in range(per_thread):
            counts.add("run")
            counts.add("failed", index)

    workers = [threading.Thread(target=bump, args=(index,)) for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counts["run"] == threads * per_thread
    assert counts["failed"] == per_thread * sum(range(threads))
    assert sum(n for event, n in heard if event == "failed") == counts["failed"]
    assert len(heard) == threads * per_thread + (threads - 1) * per_thread  # index 0 adds nothing


def test_add_returns_the_count_after_it():
    counts = EventCounts(NAMES)
    assert [counts.add("failed"), counts.add("failed", 3), counts.add("failed", 0)] == [1, 4, 4]


@pytest.mark.parametrize("misuse", [lambda counts: counts.add("ran"), lambda counts: counts["ran"],
                                    lambda counts: counts.add("ran", 0)])
def test_an_undeclared_name_is_refused_naming_it(misuse):
    counts = EventCounts(NAMES, on_count=lambda event, n: pytest.fail("nothing to hear"))
    with pytest.raises(UnknownEventError) as refused:
        misuse(counts)
    assert isinstance(refused.value, (ImadError, KeyError))
    assert str(refused.value) == ("no count named 'ran'; the declared ones are run, failed, "
                                  "dropped_busy, dropped_closed")
    assert (refused.value.name, refused.value.declared) == ("ran", NAMES)
    assert counts.snapshot() == dict.fromkeys(NAMES, 0)


def test_the_listener_hears_each_non_zero_change_once():
    heard = []
    counts = EventCounts(NAMES, on_count=lambda event, n: heard.append((event, n)))
    counts.add("run")
    counts.add("dropped_busy", 0)
    counts.add("dropped_busy", 5)
    counts.add("run", 2)
    assert heard == [("run", 1), ("dropped_busy", 5), ("run", 2)]
    assert counts.snapshot() == {"run": 3, "failed": 0, "dropped_busy": 5, "dropped_closed": 0}


def test_a_snapshot_is_a_copy_in_declared_order():
    counts = EventCounts(NAMES)
    counts.add("dropped_closed", 2)
    snapshot = counts.snapshot()
    snapshot["run"] = 99
    counts.add("failed")
    assert list(snapshot) == list(NAMES) == list(counts.names)
    assert snapshot == {"run": 99, "failed": 0, "dropped_busy": 0, "dropped_closed": 2}
    assert counts.snapshot() == {"run": 0, "failed": 1, "dropped_busy": 0, "dropped_closed": 2}


def test_a_group_holds_the_non_zero_counts_of_its_prefix_by_key():
    counts = EventCounts(NAMES)
    assert counts.group("dropped") == {}
    counts.add("dropped_closed", 3)
    counts.add("run")
    assert counts.group("dropped") == {"closed": 3}
    assert counts.group("drop") == {}  # a whole prefix, up to its underscore


def test_without_a_policy_a_listener_error_reaches_the_caller_after_counting():
    def broken(event: str, n: int) -> None:
        raise RuntimeError("metrics are down")

    counts = EventCounts(NAMES, on_count=broken)
    with pytest.raises(RuntimeError, match="metrics are down"):
        counts.add("run")
    assert counts["run"] == 1


def test_with_a_policy_a_listener_error_is_handed_over_and_counting_goes_on():
    failures: list[Exception] = []

    def broken(event: str, n: int) -> None:
        raise RuntimeError(f"cannot count {event}")

    counts = EventCounts(NAMES, on_count=broken, on_listener_error=failures.append)
    assert counts.add("run") == 1 and counts.add("failed", 2) == 2
    assert [str(error) for error in failures] == ["cannot count run", "cannot count failed"]


def test_after_fork_keeps_the_counts():
    counts = EventCounts(NAMES)
    counts.add("run", 4)
    counts.after_fork()
    assert counts.add("run") == 5
