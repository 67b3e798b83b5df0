"""`--since` and `--window` of `imad report` / `imad log export` read the forms they document."""

from __future__ import annotations

import pytest

from imad.cli.time_flags import parse_since, parse_window

T = 1_796_083_200.0  # 2026-12-01T00:00:00Z


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-12-01", T), ("2026-12-01T00:00:00Z", T), ("2026-12-01T08:00", T + 8 * 3600),
    ("2026-12-01T09:00:00+01:00", T + 8 * 3600), (" 1796083200 ", T), ("1796083200.5", T + 0.5),
    ("2026-12-01t00:00:00z", T),
])
def test_since_reads_iso_and_unix_seconds(text, expected):
    assert parse_since(text) == expected


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800.0), ("6h", 21600.0), ("1d", 86400.0),
                                               ("7d", 604800.0)])
def test_window_lengths(text, seconds):
    assert parse_window(text) == seconds
