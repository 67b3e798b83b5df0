"""Hostile standard outputs: a stdout that refuses the output (`> /dev/full`, a full disk) is one
`error:` line naming standard output and exit 3, for every command that prints (the dashboard,
the report card, an export to stdout, `--help`, `--version`); a reader that goes away (`| head`)
is a quiet 141. `imad serve --print-dashboard > /dev/full` was "unexpected OSError … (this is a
bug in imad)", `imad --help > /dev/full` printed nothing and exited 0."""

from __future__ import annotations

import subprocess
import sys

import pytest

from imad.cli.main import main
from tests.conftest import REPO_ROOT
from tests.decision_log.rows import write_log

FULL = "cannot write standard output (No space left on device); the output is incomplete"


@pytest.fixture
def log(tmp_path):
    return write_log(tmp_path / "log.db", 40)


COMMANDS = {
    "dashboard": lambda log: ["serve", "--print-dashboard"],
    "report": lambda log: ["report", "--log", str(log)],
    "report --json": lambda log: ["report", "--log", str(log), "--json"],
    "export to stdout": lambda log: ["log", "export", "--log", str(log), "--format", "jsonl"],
    "--help": lambda log: ["--help"],
    "report --help": lambda log: ["report", "--help"],
    "--version": lambda log: ["--version"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_full_stdout_is_one_error_line(name, log, capsys, monkeypatch):
    with open("/dev/full", "w") as full:
        capsys.readouterr()
        monkeypatch.setattr(sys, "stdout", full)
        status = main(COMMANDS[name](log))
        monkeypatch.undo()
    err = capsys.readouterr().err
    assert status == 3, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and ": error: " in lines[0] and FULL in lines[0], err
    assert "bug in imad" not in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["serve", "--print-dashboard"], ["--help"]],
                         ids=["dashboard", "help"])
def test_the_process_exits_3_on_dev_full(argv):
    """The real process: nothing more on stderr at the interpreter's exit (its last flush)."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "imad.cli.main", *argv], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and FULL in done.stderr


def test_a_reader_that_goes_away_is_a_quiet_141():
    """`imad --help | head -c 1`: argparse swallowed the broken pipe; the status says it."""
    done = subprocess.run(
        f"{sys.executable} -m imad.cli.main serve --help | head -c 1 >/dev/null; "
        "echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True,
        text=True, cwd=REPO_ROOT, timeout=120)
    assert done.stdout.strip() in ("0", "141") and "error" not in done.stderr
