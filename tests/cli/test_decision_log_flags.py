"""`imad ask`'s decision-log flags (`imad.cli.decision_log_flags`): the same rules as `imad serve`'s
settings — a limit or --log-text without a log, or a bad limit, names the flag."""

from __future__ import annotations

import argparse

import pytest

from imad.cli.decision_log_flags import add_decision_log_arguments, decision_log_from_args
from imad.errors import ConfigError


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_decision_log_arguments(parser, serving=False)
    return parser.parse_args(argv)


@pytest.mark.parametrize(("argv", "message"), [
    (["--log-text"], "--log-text: applies to the decision log"),
    (["--decision-log-max-rows", "5"], "--decision-log-max-rows: applies to the decision log"),
    (["--decision-log", "x.db", "--decision-log-max-rows", "0"], "--decision-log-max-rows: must be"),
    (["--decision-log", "x.db", "--decision-log-max-rows", "1e3"], "--decision-log-max-rows: must be"),
])
def test_bad_flags_name_the_flag(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=message):
        decision_log_from_args(parsed(*argv))
    assert not (tmp_path / "x.db").exists()


def test_the_flags_open_the_log(tmp_path):
    assert decision_log_from_args(parsed()) is None
    log = decision_log_from_args(parsed("--decision-log", str(tmp_path / "x.db"), "--log-text",
                                        "--decision-log-max-rows", "100"))
    try:
        assert (log.path, log.log_text, log.max_rows) == (tmp_path / "x.db", True, 100)
    finally:
        log.close()
