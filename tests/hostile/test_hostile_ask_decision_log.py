"""Hostile `--decision-log PATH` places for `imad ask` (one question, one row): a FIFO, a
device, a path under a file, a folder that does not exist, /proc, an empty or blank path. Each
is one `error:` line naming the path before any LLM call; none hangs, none prints "decision
logged" for a row that was dropped, none is "a bug in imad". The readers (`imad report`,
`imad log export`) refuse a FIFO or device the same way instead of waiting on it."""

from __future__ import annotations

import os

import pytest

from imad.cli.main import main
from tests.router.router_helpers import make_router
from tests.support.openai_stub import openai_stub

QUESTION = ["Which drug is an opioid?", "--choices", "Aspirin", "Morphine"]


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory) -> str:
    return str(make_router().save(tmp_path_factory.mktemp("router") / "router"))


def _fifo(tmp_path):
    os.mkfifo(tmp_path / "pipe.db")
    return str(tmp_path / "pipe.db")


def _under_a_file(tmp_path):
    (tmp_path / "plain").write_text("x")
    return str(tmp_path / "plain" / "log.db")


def _self_link(tmp_path):
    (tmp_path / "loop.db").symlink_to(tmp_path / "loop.db")
    return str(tmp_path / "loop.db")


CASES = [  # (name, path, exit status, message)
    ("a FIFO (waited for ever)", _fifo, 3, "is not a regular file (a FIFO, a device or a socket)"),
    ("/dev/null (logged nothing, said it did)", lambda t: os.devnull, 3, "is not a regular file"),
    ("under a file (NotADirectoryError, a bug)", _under_a_file, 3, "lies under a file"),
    ("a missing folder (row dropped)", lambda t: str(t / "no" / "log.db"), 3,
     "cannot open it for writing"),
    ("in /proc (row dropped)", lambda t: "/proc/imad-log.db", 3, "cannot open it for writing"),
    ("a name too long (ENAMETOOLONG, a bug)", lambda t: str(t / ("a" * 300 + ".db")), 3,
     "cannot be opened: File name too long"),
    ("a link to itself (ELOOP, a bug)", _self_link, 3, "cannot be opened: Too many levels of symbolic links"),
    ("empty (the current folder)", lambda t: "", 2, "--decision-log: is empty"),
    ("blank (a file named ' ')", lambda t: " ", 2, "--decision-log: is empty"),
]


@pytest.mark.parametrize("name,path,status,message", CASES, ids=[c[0] for c in CASES])
def test_an_unusable_decision_log_is_refused_before_any_call(router_dir, tmp_path, capsys,
                                                              monkeypatch, name, path, status, message):
    monkeypatch.setenv("OPENAI_API_KEY", "stub")
    monkeypatch.chdir(tmp_path)
    log = path(tmp_path)
    with openai_stub() as (llm, served):
        code = main(["ask", *QUESTION, "--router", router_dir, "--backend", "cot", "--llm", llm,
                     "--decision-log", log])
    err = capsys.readouterr().err
    assert code == status, err
    assert message in err and err.count("error:") == 1 and "bug in imad" not in err
    assert "decision logged" not in err and served.requests == 0
    assert not (tmp_path / " ").exists()


@pytest.mark.parametrize("command", [["report"], ["log", "export", "--format", "jsonl"]],
                         ids=["report", "export"])
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_readers_refuse_a_fifo_or_device_instead_of_waiting(command, kind, tmp_path, capsys):
    log = _fifo(tmp_path) if kind == "fifo" else os.devnull
    assert main([*command, "--log", log]) == 3
    err = capsys.readouterr().err
    assert f"decision log {log} is not a regular file" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [["report"], ["log", "export", "--format", "jsonl"]],
                         ids=["report", "export"])
@pytest.mark.parametrize("kind", ["name too long", "link to itself"])
def test_readers_name_a_log_path_that_cannot_be_opened(command, kind, tmp_path, capsys):
    log = str(tmp_path / ("a" * 300 + ".db")) if kind == "name too long" else _self_link(tmp_path)
    assert main([*command, "--log", log]) == 3
    err = capsys.readouterr().err
    assert f"decision log {log} cannot be opened" in err and "bug in imad" not in err


def _edited(*statements):
    """A log imad wrote, then changed by `statements`: its meta header still passes."""
    def make(tmp_path):
        import sqlite3

        from imad.decision_log import DecisionLog

        path = tmp_path / "edited.db"
        DecisionLog(path).close()
        connection = sqlite3.connect(path)
        connection.executescript(";".join(statements))
        connection.close()
        return str(path)
    return make


EDITED = [  # each printed "decision logged as ask-…" and exited 0; the row was dropped
    ("decisions a view", _edited("ALTER TABLE decisions RENAME TO rows",
                                 "CREATE VIEW decisions AS SELECT * FROM rows"),
     "(decisions is a view, not a table)"),
    ("decisions without UNIQUE", _edited("CREATE TABLE copy AS SELECT * FROM decisions",
                                         "DROP TABLE decisions", "ALTER TABLE copy RENAME TO decisions"),
     "decisions lacks UNIQUE(response_id)"),
    ("schema_version -1", _edited("UPDATE meta SET value = '-1' WHERE key = 'schema_version'"),
     "schema_version '-1' is not a version imad writes"),
]


@pytest.mark.parametrize("name,path,message", EDITED, ids=[c[0] for c in EDITED])
def test_a_damaged_log_is_refused_before_any_call(router_dir, tmp_path, capsys, monkeypatch,
                                                  name, path, message):
    monkeypatch.setenv("OPENAI_API_KEY", "stub")
    log = path(tmp_path)
    with openai_stub() as (llm, served):
        code = main(["ask", *QUESTION, "--router", router_dir, "--backend", "cot", "--llm", llm,
                     "--decision-log", log])
    err = capsys.readouterr().err
    assert code == 3, err
    assert f"decision log {log} is damaged" in err or f"decision log {log}: schema_version" in err
    assert message in err and err.count("error:") == 1 and "--log " not in err
    assert "decision logged" not in err and served.requests == 0


ANSWERED = ["Which drug is an opioid?", "--choices", "Aspirin", "Ibuprofen", "Paracetamol", "Morphine"]
"""A question the stub's critique ("D") answers."""


def test_logged_is_said_once_the_row_is_written(router_dir, tmp_path, capsys, monkeypatch):
    """The row is in the file when stderr says so (the writer is waited for)."""
    import re
    import sqlite3

    monkeypatch.setenv("OPENAI_API_KEY", "stub")
    log = tmp_path / "log.db"
    with openai_stub() as (llm, _):
        assert main(["ask", *ANSWERED, "--router", router_dir, "--backend", "cot", "--llm", llm,
                     "--decision-log", str(log)]) == 0
    (decision_id,) = re.findall(r"decision logged as (ask-[0-9a-f]+) in", capsys.readouterr().err)
    rows = sqlite3.connect(log).execute("SELECT response_id FROM decisions").fetchall()
    assert rows == [(decision_id,)]


def test_a_dropped_row_is_a_warning_not_logged(router_dir, tmp_path, capsys, monkeypatch):
    """The file refuses the write after it was opened: the run stands, stderr says the row was
    dropped and why, never "logged"."""
    import sqlite3

    from imad.decision_log.store import LogStore

    def refuse(self, rows):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(LogStore, "insert", refuse)
    monkeypatch.setenv("OPENAI_API_KEY", "stub")
    with openai_stub() as (llm, _):
        assert main(["ask", *ANSWERED, "--router", router_dir, "--backend", "cot", "--llm", llm,
                     "--decision-log", str(tmp_path / "log.db")]) == 0
    err = capsys.readouterr().err
    assert "decision logged" not in err
    assert f"was not logged in {tmp_path / 'log.db'} (dropped: unwritable); the answer stands" in err
