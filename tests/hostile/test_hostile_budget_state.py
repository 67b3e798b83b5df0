"""Hostile `imad ask --budget-state FILE` (issues 23 item 3, 24 item 5), through the real CLI
with a loopback OpenAI-compatible stub upstream.

Every damaged or unusable state file is one `error:` line naming the file, exit 2, no LLM call
(the stub counts them) and the file as it was. A state that is fine but reached through a
symlink or with a chosen mode stays that way after the run.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from imad.cli.main import main
from imad.decide import new_budget
from imad.decide.budget_state import write_budget
from imad.decide.policy import FixedThreshold
from tests.router.router_helpers import make_router
from tests.support.openai_stub import openai_stub

QUESTION = ["Which drug is an opioid?", "--choices", "Aspirin", "Ibuprofen", "Paracetamol",
            "Morphine"]


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory) -> str:
    return str(make_router().save(tmp_path_factory.mktemp("router") / "router"))


@pytest.fixture
def stub(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stub")
    with openai_stub() as served:
        yield served


def valid_state() -> dict:
    budget = new_budget(0.5, 20, FixedThreshold(0.5, source="checkpoint"))
    budget.observe(0.3)
    return budget.state_dict()


def with_raw(key: str, literal: str, inner: bool = False) -> str:
    """A valid state as JSON text with `key` (or the first answer's score) set to `literal`."""
    state = valid_state()
    if inner:
        state["answers"][0][0] = "@@"
    else:
        state[key] = "@@"
    return json.dumps(state).replace('"@@"', literal)


def ask(router_dir: str, llm: str, state, *flags: str) -> int:
    return main(["ask", *QUESTION, "--router", router_dir, "--backend", "cot", "--llm", llm,
                 "--budget-state", str(state), *flags])


# (id, file content as text or bytes, a fragment of the error)
DAMAGED = [
    ("400-digit score", with_raw("", "9" * 400, inner=True), "--budget-state: cannot read"),
    ("5000-digit observed_total", with_raw("observed_total", "1" * 5000), "cannot read"),
    ("5000-digit window", with_raw("window", "2" * 5000), "cannot read"),
    ("100k nesting", "[" * 100_000 + "]" * 100_000, "cannot read"),
    ("NaN score", with_raw("", "NaN", inner=True), "cannot read"),
    ("Infinity target", with_raw("target_rate", "Infinity"), "cannot read"),
    ("1e999 target", with_raw("target_rate", "1e999"), "cannot read"),
    ("negative score", with_raw("", "-0.5", inner=True), "is not a trigger budget state"),
    ("window as text", with_raw("window", '"20"'), "is not a trigger budget state"),
    ("target_rate true", with_raw("target_rate", "true"), "is not a trigger budget state"),
    ("answers a string", with_raw("answers", '"oops"'), "is not a trigger budget state"),
    ("escalated as text", with_raw("answers", '[[0.5, "yes"]]'), "is not a trigger budget state"),
    ("a list, not a state", "[1, 2, 3]", "is not a trigger budget state"),
    ("lone surrogate", with_raw("version", '"\\udc80"'), "cannot read"),
    ("truncated JSON", json.dumps(valid_state())[:40], "cannot read"),
    ("empty file", "", "cannot read"),
    ("not UTF-8", b"\xff\xfe{}", "cannot read"),
]


@pytest.mark.parametrize(("name", "content", "message"), DAMAGED, ids=[case[0] for case in DAMAGED])
def test_damaged_state_is_one_error_line_before_any_call(router_dir, stub, tmp_path, capsys,
                                                          name, content, message):
    llm, served = stub
    state = tmp_path / "state.json"
    data = content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass")
    state.write_bytes(data)
    assert ask(router_dir, llm, state) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: " in err and message in err and str(state) in err
    assert "Traceback" not in err
    assert served.requests == 0 and state.read_bytes() == data


def test_a_state_over_the_size_limit_is_refused_unread(router_dir, stub, tmp_path, capsys,
                                                        monkeypatch):
    llm, served = stub
    monkeypatch.setattr("imad.decide.budget_state.MAX_STATE_BYTES", 1024)
    state = tmp_path / "state.json"
    state.write_text(json.dumps(valid_state()) + " " * 2048)
    assert ask(router_dir, llm, state) == 2
    err = capsys.readouterr().err
    assert "over the limit of 1,024" in err and str(state) in err and served.requests == 0


def _fifo(tmp_path):
    path = tmp_path / "state.fifo"
    os.mkfifo(path)
    return path


def _directory(tmp_path):
    path = tmp_path / "state.d"
    path.mkdir()
    return path


def _link_to_dev_zero(tmp_path):
    path = tmp_path / "state.json"
    path.symlink_to("/dev/zero")
    return path


def _symlink_loop(tmp_path):
    path, other = tmp_path / "state.json", tmp_path / "other.json"
    path.symlink_to(other)
    other.symlink_to(path)
    return path


def _self_link(tmp_path):
    path = tmp_path / "state.json"
    path.symlink_to(path)
    return path


def _missing_directory(tmp_path):
    return tmp_path / "no" / "such" / "state.json"


def _unwritable_directory(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    return folder / "state.json"


def _read_only_file(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps(valid_state()))
    path.chmod(0o444)
    return path


# (id, make the path, a fragment of the error); each with --target-trigger-rate, so a missing
# file would otherwise be created.
UNUSABLE = [
    ("FIFO", _fifo, "is not a regular file (a FIFO)"),
    ("directory", _directory, "is not a regular file (a directory)"),
    ("symlink to /dev/zero", _link_to_dev_zero, "is not a regular file (a character device)"),
    ("/dev/null", lambda tmp_path: "/dev/null", "is not a regular file (a character device)"),
    ("symlink loop", _symlink_loop, "Too many levels of symbolic links"),  # issue 34
    ("symlink to itself", _self_link, "Too many levels of symbolic links"),
    ("new file in a missing directory", _missing_directory, "does not exist; create it first"),
    ("new file in an unwritable directory", _unwritable_directory, "is not writable"),
    ("read-only file", _read_only_file, "is read-only"),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("name", "make", "message"), UNUSABLE, ids=[case[0] for case in UNUSABLE])
def test_unusable_state_path_is_refused_before_any_call(router_dir, stub, tmp_path, capsys,
                                                        name, make, message):
    llm, served = stub
    path = make(tmp_path)
    try:
        assert ask(router_dir, llm, path, "--target-trigger-rate", "0.5") == 2
    finally:
        for folder in tmp_path.iterdir():
            if folder.is_dir() and not folder.is_symlink():
                folder.chmod(0o755)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and str(path) in err
    assert served.requests == 0


def test_a_symlinked_state_updates_its_target_and_keeps_the_mode(router_dir, stub, tmp_path):
    llm, served = stub
    target = tmp_path / "real" / "state.json"
    target.parent.mkdir()
    write_budget(new_budget(0.5, 20, FixedThreshold(0.5, source="checkpoint")), target)
    target.chmod(0o640)
    link = tmp_path / "state.json"
    link.symlink_to(target)
    assert ask(router_dir, llm, link) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert json.loads(target.read_text())["observed_total"] == 1 and served.requests >= 1


def test_a_new_state_gets_the_umask_mode(router_dir, stub, tmp_path):
    llm, _ = stub
    state = tmp_path / "state.json"
    umask = os.umask(0o022)
    try:
        assert ask(router_dir, llm, state, "--target-trigger-rate", "0.5") == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE(state.stat().st_mode) == 0o644
