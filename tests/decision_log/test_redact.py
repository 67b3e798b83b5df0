"""A decision-log URL's password never shows: in the URL's user part, in its query, percent-encoded
or not, and in any message that quotes it."""

from __future__ import annotations

import pytest

from imad.decision_log.redact import redact_text, redact_url
from imad.decision_log.url import parse_location

CASES = [  # (url, shown)
    ("postgresql://imad:s3cret@db:5432/log", "postgresql://imad:***@db:5432/log"),
    ("postgresql://imad:p%40ss%3Aw%2Frd@db/log", "postgresql://imad:***@db/log"),
    ("postgresql://imad:p@ss@db/log", "postgresql://imad:***@db/log"),
    ("postgresql://db/log?user=imad&password=s3cret&sslmode=require",
     "postgresql://db/log?user=imad&password=***&sslmode=require"),
    ("postgresql://imad@db/log", "postgresql://imad@db/log"),
    ("postgresql://db:5432/log", "postgresql://db:5432/log"),
]


@pytest.mark.parametrize("url,shown", CASES, ids=[case[1] for case in CASES])
def test_the_password_is_hidden(url, shown):
    assert redact_url(url) == shown


def test_a_message_quoting_the_url_or_its_password_is_redacted():
    url = "postgresql://imad:p%40ss@db/log?sslpassword=k3y"
    message = f"cannot open {url}: user imad p@ss rejected, key k3y; password=hunter2 in conninfo"
    shown = redact_text(message, url)
    assert "p@ss" not in shown and "p%40ss" not in shown and "k3y" not in shown
    assert "hunter2" not in shown and "postgresql://imad:***@db/log?sslpassword=***" in shown


def test_a_location_shows_the_redacted_url_and_a_path_as_given(tmp_path):
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'imad[postgres]')")
    location = parse_location("postgresql://imad:s3cret@db/log")
    assert location.database and location.shown == "postgresql://imad:***@db/log"
    assert "s3cret" not in repr(location)
    assert parse_location(str(tmp_path / "a:b.db")).path == tmp_path / "a:b.db"
