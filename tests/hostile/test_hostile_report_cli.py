"""Hostile flags of `imad report` and `imad log export` (issue 32 item 4): a bad --since or
--window, an unknown --model, an export to a path that cannot be written. Each is one `error:`
line in plain words naming the flag or path, no traceback, and nothing half-written."""

from __future__ import annotations

import json
import os
import stat

import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from tests.decision_log.rows import decision_row


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "log.db"
    with DecisionLog(path) as writer:
        for index in range(4):
            writer.record(decision_row(index, model="gpt-x" if index % 2 else "llama"))
    return path


def failed(argv, status, capsys) -> str:
    assert main(argv) == status
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and ": error: " in lines[0] and "Traceback" not in captured.err
    assert captured.out == ""
    return lines[0]


SINCE = ["yesterday", "2026-13-01", "2026-12-01T25:00", "", "-5", "1e9", "12:00", "2026-12-01 garbage",
         "9" * 40]


@pytest.mark.parametrize("since", SINCE)
def test_a_bad_since_names_the_flag_and_the_forms(since, log, capsys):
    for argv in (["report", "--log", str(log), "--since", since],
                 ["log", "export", "--log", str(log), "--format", "jsonl", "--since", since]):
        line = failed(argv, 2, capsys)
        assert "--since:" in line and "ISO 8601" in line and "unix seconds" in line


@pytest.mark.parametrize("window", ["0h", "1 day", "1w", "-1d", "h", "1.5h", "9999999d"])
def test_a_bad_window_names_the_flag(window, log, capsys):
    line = failed(["report", "--log", str(log), f"--window={window}"], 2, capsys)
    assert "--window:" in line and "30m, 6h, 1d, 7d" in line


def test_an_unknown_model_lists_the_models_in_the_log(log, capsys):
    line = failed(["report", "--log", str(log), "--model", "gpt-y"], 2, capsys)
    assert "no decision" in line and "'gpt-y'" in line and "'gpt-x', 'llama'" in line


ROUTERS = [("", "scored by ''"), ("   ", "scored by ''"), ("abab", "scored by 'abab'"),
           ("imad-router-v3", "'imad-router-v3'"), ("zzzzzzzz", "'zzzzzzzz'"),
           ("ab" * 40, "'" + "ab" * 40 + "'"), ("imad-router-v2x", "'imad-router-v2x'")]
"""`--router` values that select nothing: a name no row has, a hash prefix under 6 digits, or
longer than the hash, not hex, blank. Each names what the log holds."""


@pytest.mark.parametrize(("router", "named"), ROUTERS, ids=[repr(r)[:20] for r, _ in ROUTERS])
def test_a_router_the_log_lacks_names_the_routers_it_holds(router, named, log, capsys):
    line = failed(["report", "--log", str(log), "--router", router], 2, capsys)
    assert "--router: no decision in the selection was scored by" in line and named in line
    assert "imad-router-v2 (abababababab)" in line


@pytest.mark.parametrize("kind", ["missing folder", "a folder", "a file as folder"])
def test_export_to_an_unwritable_path(kind, log, tmp_path, capsys):
    if kind == "missing folder":
        out = tmp_path / "no" / "such" / "out.jsonl"
    elif kind == "a folder":
        out = tmp_path / "folder"
        out.mkdir()
    else:
        (tmp_path / "plain").write_text("x")
        out = tmp_path / "plain" / "out.jsonl"
    line = failed(["log", "export", "--log", str(log), "--format", "jsonl", "--out", str(out)], 3,
                  capsys)
    assert f"--out {out}" in line
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_parquet_needs_an_out_file(log, capsys):
    line = failed(["log", "export", "--log", str(log), "--format", "parquet"], 2, capsys)
    assert "--out" in line and "Parquet is binary" in line


def test_report_out_that_is_a_file(log, tmp_path, capsys):
    (tmp_path / "taken").write_text("x")
    line = failed(["report", "--log", str(log), "--out", str(tmp_path / "taken")], 3, capsys)
    assert "cannot create --out" in line


def test_an_unknown_format_is_a_usage_error(log, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["log", "export", "--log", str(log), "--format", "csv"])
    assert caught.value.code == 2
    assert "invalid choice: 'csv'" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["the log", "its -wal", "its -journal", "a hard link to it",
                                  "a symbolic link to it"])
def test_export_never_overwrites_the_log_it_reads(kind, log, capsys):
    """`--out` naming the log (issue: `--out log.db` replaced the log by its JSON lines, exit 0)."""
    before = log.read_bytes()
    out = {"the log": log, "its -wal": log.with_name(log.name + "-wal"),
           "its -journal": log.with_name(log.name + "-journal")}.get(kind, log.with_name("alias.db"))
    if kind == "a hard link to it":
        os.link(log, out)
    elif kind == "a symbolic link to it":
        out.symlink_to(log)
    line = failed(["log", "export", "--log", str(log), "--format", "jsonl", "--out", str(out)], 2,
                  capsys)
    assert f"--out: {out} is the decision log being exported" in line
    assert log.read_bytes() == before


def test_export_into_a_fifo_writes_through_it(log, tmp_path, capsys):
    """A device or FIFO (`/dev/null`, `/dev/stdout`) is written in place, never renamed over:
    as root the rename replaced the device itself with a plain file."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert main(["log", "export", "--log", str(log), "--format", "jsonl", "--out", str(fifo)]) == 0
        lines = os.read(reader, 1 << 20).decode().splitlines()
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [json.loads(line)["response_id"] for line in lines] == [f"chatcmpl-{i:06d}" for i in range(4)]
    assert "exported 4 decisions" in capsys.readouterr().err


def test_export_through_a_symbolic_link_replaces_its_target_and_keeps_the_link(log, tmp_path, capsys):
    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    target.chmod(0o644)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert main(["log", "export", "--log", str(log), "--format", "jsonl", "--out", str(link)]) == 0
    assert link.is_symlink() and len(target.read_text().splitlines()) == 4
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_a_new_export_gets_the_umask_mode_and_leaves_the_umask_alone(log, tmp_path, capsys, umask):
    before = os.umask(umask)
    try:
        out = tmp_path / "new.jsonl"
        assert main(["log", "export", "--log", str(log), "--format", "jsonl", "--out", str(out)]) == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
        assert os.umask(umask) == umask  # read, not changed
    finally:
        os.umask(before)
