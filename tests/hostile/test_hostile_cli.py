"""Hostile and careless calls of the `imad` command (issue 14, items 1, 6 and the entry rule).

The rule under test (`imad.commandline.entry`): a typed error is one line `imad COMMAND: error: …` on
stderr with no traceback, exit 2 for unusable input and 3 for a failed run — and a run that
produced no answer is a failed run, never `answer: (none)` with 0. `--debug` (before or after the
command) shows the traceback instead. The property feeds generated questions and flags to `imad
ask` with a scripted model behind it and checks that only those exit statuses come back.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import imad.llm.spec
from imad.cli.main import main
from imad.errors import ModelFileError
from imad.llm.scripted import ScriptedChat
from tests.conftest import REPO_ROOT
from tests.router.router_helpers import make_router

UNREACHABLE = "openai:m@http://127.0.0.1:9/v1?max_retries=0"


class HTMLHandler(http.server.BaseHTTPRequestHandler):
    """A 'model server' that answers every POST with 200 and an HTML page."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        page = b"<html><body>Welcome to nginx!</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def html_upstream() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HTMLHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"openai:m@http://127.0.0.1:{server.server_address[1]}/v1?max_retries=0"
    server.shutdown()


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory) -> str:
    return str(make_router().save(tmp_path_factory.mktemp("router") / "router"))


def run_imad(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# (id, argv, exit status, stderr fragment): `HTML`/`ROUTER` are replaced by the fixtures' values.
CASES = [
    ("unreachable upstream", ["ask", "Is it?", "--llm", UNREACHABLE, "--backend", "cot"], 3,
     "imad ask: error: no answer was produced: the self-critique call ended with llm_error"),
    ("gguf:/etc/passwd", ["ask", "Is it?", "--llm", "gguf:/etc/passwd"], 3,
     "imad ask: error: /etc/passwd is not a GGUF model file"),
    ("upstream answering HTML", ["ask", "Is it?", "--llm", "HTML", "--backend", "cot"], 3,
     "body that is not JSON: '<html>"),
    ("critique with gguf:/etc/passwd", ["critique", "Is it?", "--llm", "gguf:/etc/passwd"], 3,
     "imad critique: error: /etc/passwd is not a GGUF model file"),
    ("critique against an HTML upstream", ["critique", "Is it?", "--llm", "HTML"], 3,
     "imad critique: error: the self-critique ended with llm_error"),
    ("--tau nan", ["ask", "Is it?", "--tau", "nan", "--llm", UNREACHABLE], 2,
     "imad ask: error: --tau: must be a number in [0, 1], got nan"),
    ("timeout=nan in the --llm spec", ["ask", "Is it?", "--llm", "openai:m@http://127.0.0.1:9/v1?timeout=nan"],
     2, "imad ask: error: --llm option timeout: must be a finite number in (0, 86400], got 'nan'"),
    ("question with a lone surrogate", ["ask", "Is it\udc80?", "--llm", UNREACHABLE], 2,
     "imad ask: error: the question's text is not valid Unicode text: a lone surrogate U+DC80"),
    ("context with a lone surrogate", ["critique", "Is it?", "--context", "\ud800", "--llm", UNREACHABLE], 2,
     "the question's context is not valid Unicode text"),
]


@pytest.mark.parametrize(("name", "argv", "status", "message"), CASES, ids=[c[0] for c in CASES])
def test_hostile_call_gets_one_error_line_and_its_status(capsys, html_upstream, router_dir, name, argv,
                                                         status, message):
    argv = [html_upstream if a == "HTML" else a for a in argv]
    code, out, err = run_imad(capsys, *argv, "--router", router_dir) if argv[0] == "ask" else \
        run_imad(capsys, *argv)
    assert code == status, err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "unexpected" not in err  # typed, not a bug caught at the edge
    if argv[0] == "ask" and "upstream" in name:
        assert "answer: (none)" in out  # the pipeline ran: its report is still printed, nothing lost


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_traceback(capsys, where):
    argv = ["critique", "Is it?", "--llm", "gguf:/etc/passwd"]
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    with pytest.raises(ModelFileError, match="not a GGUF model file"):
        main(argv)


def test_help_documents_the_exit_statuses(capsys):
    for argv in (["--help"], ["ask", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        out = " ".join(capsys.readouterr().out.split())  # argparse re-wraps the epilog
        assert "exit status: 0 success; 2 usage error" in out and "3 failed run" in out
        assert "--debug" in out


def test_the_installed_entry_point_exits_3_without_a_traceback():
    command = [sys.executable, "-m", "imad.cli.main", "ask", "Is it?", "--llm", "gguf:/etc/passwd"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert result.returncode == 3
    assert result.stderr.strip().splitlines() == [
        "imad ask: error: /etc/passwd is not a GGUF model file (it does not start with the bytes 'GGUF', "
        "but b'root'); pass a .gguf file to gguf:PATH"]


@pytest.mark.llm
def test_issue_reproduction_context_too_large_for_the_embedded_model(capsys):
    code, out, err = run_imad(capsys, "ask", "Is it?", "--tau", "0", "--task-type", "yes_no_maybe",
                              "--context", "word " * 3998)
    assert code == 2 and out == ""
    assert ("the prompt is 4,185 tokens (llama.cpp's tokenizer) and 512 more are reserved for the answer, "
            "but model 'SmolLM2-135M-Instruct-Q4_1' has a context window of 4,096 tokens") in err
    assert "Traceback" not in err


# --- property ------------------------------------------------------------------------------------

CRITIQUE = json.dumps({"initial_answer": "A", "initial_reasoning": "It is the first option here.",
                       "critique": "B could be argued, since it is also listed.", "alternative_answer": "B",
                       "final_answer": "A", "confidence_initial": 70, "confidence_critique": 30})
ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=40)
HOSTILE_REPLIES = st.sampled_from([CRITIQUE, "", "<html>", CRITIQUE.replace("70", "9" * 5000),
                                   CRITIQUE.replace('"It is', '"\\ud800 It is'), "null", "[" * 3000])


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(question=ANY_TEXT, context=ANY_TEXT, choices=st.lists(ANY_TEXT, max_size=3),
       task_type=st.sampled_from(["", "multiple_choice", "yes_no_maybe", "numeric", "short_answer", "x"]),
       tau=st.sampled_from(["", "0", "1", "nan", "-1", "inf", "abc"]), reply=HOSTILE_REPLIES)
def test_property_imad_ask_exits_0_2_or_3_with_one_error_line(capsys, monkeypatch_session, router_dir,
                                                              question, context, choices, task_type, tau,
                                                              reply):
    chat = ScriptedChat(lambda request: reply)
    monkeypatch_session.setattr(imad.llm.spec, "chat_model_from_spec", lambda spec, **kwargs: chat)
    argv = ["ask", "--router", router_dir, "--backend", "cot", "--context", context, "--", question]
    argv[1:1] = ([f"--task-type={task_type}"] if task_type else []) + ([f"--tau={tau}"] if tau else [])
    if choices:
        argv[1:1] = ["--choices", *[f" {c}" for c in choices]]  # a leading space: never read as a flag
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse refusing a value: its own usage status and message
        assert stop.code == 2
        return
    err = capsys.readouterr().err
    assert code in (0, 2, 3)
    if code:
        assert err.startswith("imad ask: error: ") and len(err.strip().splitlines()) == 1, err
        assert "unexpected" not in err and "Traceback" not in err


@pytest.fixture(scope="module")
def monkeypatch_session() -> Iterator[pytest.MonkeyPatch]:
    patch = pytest.MonkeyPatch()
    yield patch
    patch.undo()
