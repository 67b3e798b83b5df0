"""Hostile `imad serve --print-dashboard` and `--datasource-uid` command lines (issue 35).

The choice: `--print-dashboard` checks the values of every other flag as a start would (a
serve command line with a typo fails the same way with the switch added), then prints and
exits 0 without doing what only a start does (loading the router, opening the decision log,
binding the host and port). `--datasource-uid` without `--print-dashboard` is an error, not a
flag silently ignored. Every bad row is exit 2 with one `error:` line naming the flag and
nothing on stdout.
"""

from __future__ import annotations

import json

import pytest

from imad.cli.main import main

BAD = [
    (["--datasource-uid", "prom"], "--datasource-uid: only sets the data source of --print-dashboard"),
    (["--print-dashboard", "--datasource-uid", ""], "--datasource-uid: '' is not a Grafana data-source uid"),
    (["--print-dashboard", "--datasource-uid", "a b"], "--datasource-uid: 'a b' is not a Grafana"),
    (["--print-dashboard", "--datasource-uid", "x" * 41], "is not a Grafana data-source uid"),
    (["--print-dashboard", "--datasource-uid", "../prom"], "'../prom' is not a Grafana data-source uid"),
    (["--print-dashboard", "--datasource-uid", "${DS_PROMETHEUS}"], "is not a Grafana data-source uid"),
    (["--print-dashboard", "--datasource-uid", "prom\n"], "is not a Grafana data-source uid"),
    (["--print-dashboard", "--datasource-uid", "\udcff"], "is not a Grafana data-source uid"),
    (["--print-dashboard", "--datasource-uid", "\u0662"], "is not a Grafana data-source uid"),
    (["--print-dashboard", "--port", "70000"], "--port: must be an integer in [0, 65535]"),
    (["--print-dashboard", "--max-queue", "-1"], "--max-queue: must be none or an integer in [0, 65536]"),
    (["--print-dashboard", "--tau", "nan"], "--tau: must be none or a number in [0, 1]"),
    (["--print-dashboard", "--target-trigger-rate", "2"], "--target-trigger-rate: must be none or a finite"),
    (["--print-dashboard", "--budget-window", "100"], "--budget-window: sets the window of a trigger budget"),
    (["--print-dashboard", "--api-key-env", "IMAD_TEST_SURELY_UNSET"],
     "--api-key-env: the environment variable"),
    (["--print-dashboard", "--scoring-processes", "2", "--no-scoring-process"],
     "--no-scoring-process: means --scoring-processes 0"),
]


@pytest.mark.parametrize(("flags", "message"), BAD)
def test_a_bad_flag_with_or_for_print_dashboard_is_one_error_line(capsys, monkeypatch, flags, message):
    monkeypatch.delenv("IMAD_TEST_SURELY_UNSET", raising=False)
    assert main(["serve", *flags]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err
    assert len([line for line in captured.err.splitlines() if "error:" in line]) == 1
    assert captured.out == ""


@pytest.mark.parametrize("flags", [["--print-dashboard=yes"], ["--print-dashboard="]])
def test_print_dashboard_is_a_switch(capsys, flags):
    with pytest.raises(SystemExit) as stopped:
        main(["serve", *flags])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "--print-dashboard is a switch and takes no value" in err


def test_datasource_uid_needs_a_value(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--print-dashboard", "--datasource-uid"])
    assert stopped.value.code == 2 and "--datasource-uid" in capsys.readouterr().err


def test_what_only_a_start_does_is_not_done(capsys, tmp_path):
    """A router that does not exist, a decision log in a missing folder and a host that
    cannot resolve are a start's errors, not the printer's: it prints, creates nothing."""
    log = tmp_path / "missing" / "decisions.sqlite"
    assert main(["serve", "--print-dashboard", "--router", str(tmp_path / "no-router"),
                 "--decision-log", str(log), "--host", "no-such-host.invalid", "--workers", "4"]) == 0
    assert json.loads(capsys.readouterr().out)["uid"] == "imad-serve"
    assert list(tmp_path.iterdir()) == []
