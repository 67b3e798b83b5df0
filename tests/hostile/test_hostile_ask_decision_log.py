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
