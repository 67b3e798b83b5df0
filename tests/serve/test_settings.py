"""Server settings are validated on creation and name the offending `imad serve` flag."""

from __future__ import annotations

import pytest

from imad.errors import ConfigError
from imad.serve.settings import ServeSettings, auto_scoring_processes, usable_cores


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
    ({"scoring_processes": -1}, "--scoring-processes"),
    ({"scoring_processes": True}, "--scoring-processes"),
])
def test_bad_values_name_the_flag(fields, flag):
    with pytest.raises(ConfigError) as caught:
        ServeSettings(**fields)
    assert caught.value.field == flag


def test_the_key_never_shows_in_repr():
    assert "s3cret" not in repr(ServeSettings(api_key="s3cret"))


@pytest.mark.parametrize(("cores", "workers", "expected"), [
    (1, 1, 1), (2, 1, 2), (2, 2, 1), (2, 4, 1), (3, 2, 1), (16, 4, 4), (64, 1, 4), (64, 32, 2),
])
def test_the_default_scoring_processes_are_one_per_core_of_each_process_share(cores, workers, expected):
    assert auto_scoring_processes(cores, workers) == expected


def test_scoring_processes_in_force_follow_the_setting_or_the_machine():
    assert ServeSettings(scoring_processes=0).scoring_process_count == 0
    assert ServeSettings(scoring_processes=3).scoring_process_count == 3
    assert ServeSettings(workers=2).scoring_process_count == auto_scoring_processes(usable_cores(), 2)
