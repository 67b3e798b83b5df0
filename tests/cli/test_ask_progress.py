"""`imad ask` says on stderr what it waits for — the self-critique, each debate round — when
stderr is a terminal (a pty here), and nothing more when it is not; stdout is the same bytes
either way. A real `imad ask` process against a loopback stub model server."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.router.router_helpers import make_router
from tests.support.serve_process import upstream_stub

pytestmark = pytest.mark.slow


def ask(router_dir, url: str, *, stderr_on_a_terminal: bool) -> tuple[bytes, str]:
    """stdout and stderr of one `imad ask` that escalates (τ 0.99) to a small debate."""
    command = [sys.executable, "-m", "imad.cli.main", "ask", "Which number is tagged #7?",
               "--router", str(router_dir), "--llm", f"openai:stub@{url}?max_retries=0",
               "--tau", "0.99", "--backend", "mad"]
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                                          os.environ.get("PYTHONPATH")]))}
    if not stderr_on_a_terminal:
        done = subprocess.run(command, capture_output=True, env=environ, cwd=REPO_ROOT, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout, done.stderr.decode()
    master, slave = os.openpty()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, env=environ,
                               cwd=REPO_ROOT)
    os.close(slave)
    said = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        said += chunk
    os.close(master)
    out = process.stdout.read()
    assert process.wait(300) == 0, said
    return out, said.decode()


def test_progress_on_a_terminal_only_and_stdout_unchanged(tmp_path):
    router_dir = make_router().save(tmp_path / "router")
    with upstream_stub() as upstream:
        plain_out, plain_err = ask(router_dir, upstream.url, stderr_on_a_terminal=False)
        tty_out, tty_err = ask(router_dir, upstream.url, stderr_on_a_terminal=True)
        calls = upstream.calls
    assert tty_out == plain_out and b"debate:" in plain_out
    assert "imad ask:" not in plain_err
    lines = [line for line in tty_err.splitlines() if line.startswith("imad ask: ")]
    assert lines[0].startswith("imad ask: self-critique: asking stub")
    rounds = [line for line in lines if "debate round" in line]
    assert rounds and rounds[0].startswith("imad ask: debate round 1: ")
    assert calls["critique"] == 2  # one per run
