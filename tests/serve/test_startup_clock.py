"""`StartupClock`: the laps a server's `server_ready` line reports add up to its total."""

from __future__ import annotations

import time

from imad.serve.startup_clock import StartupClock


def test_laps_are_the_time_between_them_and_the_total_covers_them():
    clock = StartupClock(started=time.monotonic() - 2.0)  # the process started 2 s ago
    clock.lap("imports_and_checks")
    clock.lap("router_and_chat_model")
    summary = clock.summary()
    phases = summary["startup_phases"]
    assert list(phases) == ["imports_and_checks", "router_and_chat_model"]
    assert phases["imports_and_checks"] >= 2.0 and phases["router_and_chat_model"] >= 0.0
    assert summary["startup_s"] >= sum(phases.values()) - 0.002  # rounded to milliseconds


def test_the_summary_is_a_copy():
    clock = StartupClock()
    clock.lap("a")
    summary = clock.summary()
    clock.lap("b")
    assert list(summary["startup_phases"]) == ["a"]
