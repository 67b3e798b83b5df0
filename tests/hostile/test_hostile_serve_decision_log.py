"""Hostile decision-log flags of `imad serve` (issue 32 item 2): a bad value or a flag without
`--decision-log` is exit 2 naming the flag; a file that is not a decision log this imad can
write is exit 3 naming the file — before any model loads, the port is served or the file is
changed."""

from __future__ import annotations

import os
import sqlite3

import pytest

from imad.cli.main import main
from imad.decision_log.schema import SCHEMA_VERSION
from tests.router.router_helpers import make_router

HUGE = "9" * 400


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router().save(tmp_path_factory.mktemp("router") / "router")


def serve(router_dir, *flags: str) -> int:
    return main(["serve", "--router", str(router_dir), "--port", "0", *flags])


@pytest.mark.parametrize(("flags", "message"), [
    (["--decision-log", "x.db", "--decision-log-max-rows", "0"],
     "--decision-log-max-rows: must be none or an integer in [1, 1000000000]"),
    (["--decision-log", "x.db", "--decision-log-max-rows", "-5"], "--decision-log-max-rows: must be"),
    (["--decision-log", "x.db", "--decision-log-max-rows", HUGE], "--decision-log-max-rows: must be"),
    (["--decision-log", "x.db", "--decision-log-max-rows", "ten"], "--decision-log-max-rows: must be"),
    (["--decision-log", "x.db", "--decision-log-max-rows", "2.5"], "--decision-log-max-rows: must be"),
    (["--log-text"], "--log-text: applies to the decision log, which --decision-log PATH turns on"),
    (["--decision-log-max-rows", "10"], "--decision-log-max-rows: applies to the decision log"),
    (["--decision-log", ""], "--decision-log: must be"),
    (["--decision-log", "a\x00b"], "--decision-log: must be"),
])
def test_bad_decision_log_flags_are_exit_2(router_dir, capsys, tmp_path, monkeypatch, flags, message):
    monkeypatch.chdir(tmp_path)
    assert serve(router_dir, *flags) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "server_ready" not in err
    assert not (tmp_path / "x.db").exists()


def foreign(path):
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE customers (name TEXT)")
    connection.commit()
    connection.close()


def newer(path):
    from imad.decision_log import DecisionLog

    DecisionLog(path).close()
    connection = sqlite3.connect(path)
    connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 3),))
    connection.commit()
    connection.close()


def edited(*statements):
    """A log imad wrote, then changed by `statements` (its header still right)."""
    def make(path):
        from imad.decision_log import DecisionLog

        DecisionLog(path).close()
        connection = sqlite3.connect(path)
        connection.executescript(";".join(statements))
        connection.close()
    return make


@pytest.mark.parametrize(("make", "message"), [
    (foreign, "is a SQLite database but not an imad decision log"),
    # each started, then dropped every row: written 0, dropped {other: n}
    (edited("ALTER TABLE decisions RENAME TO rows", "CREATE VIEW decisions AS SELECT * FROM rows"),
     "is damaged: its tables are not the ones imad writes (decisions is a view, not a table)"),
    (edited("CREATE TABLE copy AS SELECT * FROM decisions", "DROP TABLE decisions",
            "ALTER TABLE copy RENAME TO decisions"), "decisions lacks UNIQUE(response_id)"),
    (edited("UPDATE meta SET value = '0' WHERE key = 'schema_version'"),
     "schema_version '0' is not a version imad writes"),
    (newer, f"schema version {SCHEMA_VERSION + 3}, newer than the version {SCHEMA_VERSION}"),
    (lambda path: path.write_text("hello\n"), "is not a SQLite database"),
    (lambda path: path.mkdir(), "is a directory"),
    (lambda path: os.mkfifo(path), "is not a regular file (a FIFO"),  # serve waited on it for ever
    (lambda path: path.symlink_to(path), "cannot be opened: Too many levels of symbolic links"),  # was
    # "unexpected OSError … a bug in imad"
])
def test_a_file_that_is_not_a_decision_log_is_exit_3(router_dir, capsys, tmp_path, make, message):
    path = tmp_path / "log.db"
    make(path)
    before = path.read_bytes() if path.is_file() else None
    assert serve(router_dir, "--decision-log", str(path)) == 3
    err = capsys.readouterr().err
    assert message in err and str(path) in err and "Traceback" not in err
    assert "server_ready" not in err
    assert (path.read_bytes() if path.is_file() else None) == before


@pytest.mark.slow
def test_the_server_process_refuses_a_log_with_a_view_for_its_table(router_dir, tmp_path):
    """The reported reproduction, as a real `imad serve` process: it started and dropped every
    row (`written: 0, dropped: {other: 3}`); now it exits 3 before serving, naming the file."""
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    path = tmp_path / "x.db"
    edited("ALTER TABLE decisions RENAME TO rows", "CREATE VIEW decisions AS SELECT * FROM rows")(path)
    done = subprocess.run(
        [sys.executable, "-m", "imad.cli.main", "serve", "--router", str(router_dir), "--port", "0",
         "--decision-log", str(path)], capture_output=True, text=True, cwd=REPO_ROOT, timeout=180)
    assert done.returncode == 3, done.stderr
    assert (f"imad serve: error: decision log {path} is damaged: its tables are not the ones imad "
            "writes (decisions is a view, not a table)") in done.stderr
    assert "server_ready" not in done.stderr + done.stdout and "Traceback" not in done.stderr
