"""Server settings are validated on creation and name the offending `imad serve` flag."""

from __future__ import annotations

import pytest

from imad.errors import ConfigError
from imad.serve.settings import ServeSettings


@pytest.mark.parametrize(("fields", "flag"), [
    ({"api_key": "  "}, "--api-key-env"),
    ({"max_request_bytes": 10}, "--max-request-bytes"),
    ({"max_question_chars": 0}, "--max-question-chars"),
    ({"max_question_chars": 10**6}, "--max-question-chars"),
    ({"max_concurrency": 0}, "--max-concurrency"),
    ({"request_timeout_s": 0}, "--request-timeout"),
    ({"retry_after_s": 0}, "--retry-after"),
    ({"default_backend": "cot"}, "--backend"),
    ({"default_tau": 1.2}, "--tau"),
    ({"shutdown_timeout_s": -1}, "--shutdown-timeout"),
])
def test_bad_values_name_the_flag(fields, flag):
    with pytest.raises(ConfigError) as caught:
        ServeSettings(**fields)
    assert caught.value.field == flag


def test_the_key_never_shows_in_repr():
    assert "s3cret" not in repr(ServeSettings(api_key="s3cret"))
