"""Real command lines against a loopback stub that counts calls (issue 24, items 1–3).

Each hostile setting goes through a real subprocess of its entry point — `imad debate --set`,
`imad ask --llm 'openai:…?…'`, `python -m training.evaluate --backend-option`, `imad serve` —
and must end with one `error:` line and exit 2 before the stub sees a call. A debate that
gives no answer ends with `error:` and exit 3; a closed stdout pipe ends quietly.
Bounded by pytest-timeout, never by timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.support.counting_stub import openai_stub

pytestmark = pytest.mark.timeout(300)
QUESTION = ["Which one is a fruit?", "--choices", "apple", "brick"]
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "IMAD_DEBUG": ""}


def _run(*arguments: str, module: str = "imad.cli.main") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *arguments], capture_output=True,
                          text=True, cwd=REPO_ROOT, env=ENV, timeout=240)


def _one_error_line(result: subprocess.CompletedProcess[str], prefix: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), result.stderr
    return lines[0]


@pytest.mark.parametrize(("setting", "message"), [
    ("n_agents=abc", "--set n_agents: must be an integer in [2, 64], got 'abc'"),
    ("n_agents=١٢", "--set n_agents: must be an integer in [2, 64]"),
    ("n_agents=1000000000", "--set n_agents: must be an integer in [2, 64]"),
    ("n_agents=2.5", "--set n_agents: must be an integer"),
    ("eta=1e308", "--set eta: must be a finite number in [0, 100], got '1e308'"),
    ("seed=nan", "--set seed: must be an integer"),
    ("max_tokens=inf", "--set max_tokens: must be an integer"),
    ("show_influence=maybe", "--set show_influence: must be true or false, got 'maybe'"),
    ("top_logprobs=5.5", "--set top_logprobs: must be an integer in [1, 20]"),
])
def test_debate_set_refuses_before_any_call(setting, message):
    with openai_stub() as stub:
        result = _run("debate", *QUESTION, "--llm", stub.spec("max_retries=0"), "--set", setting)
        assert stub.calls == 0
    assert result.returncode == 2
    assert message in _one_error_line(result, "imad debate: error: ")


@pytest.mark.parametrize(("options", "message"), [
    ("timeout=1e308", "--llm option timeout: must be a finite number in (0, 86400]"),
    ("max_retries=1000000000&backoff_base=0", "--llm option max_retries: must be an integer in [0, 20]"),
    ("max_retries=1.5", "--llm option max_retries: must be an integer"),
    ("context_window=%D9%A1%D9%A2", "--llm option context_window: must be none or an integer"),
])
def test_ask_llm_options_refuse_before_any_call(options, message):
    with openai_stub() as stub:
        result = _run("ask", "Is it?", "--llm", stub.spec(options))
        assert stub.calls == 0
    assert result.returncode == 2
    assert message in _one_error_line(result, "imad ask: error: ")


def test_local_n_threads_beyond_the_machine_is_a_usage_error_not_a_crash():
    result = _run("debate", *QUESTION, "--llm", "local?n_threads=1000")
    assert result.returncode == 2
    assert "--llm option n_threads: must be an integer in [1, " in _one_error_line(
        result, "imad debate: error: ")


def test_evaluate_backend_option_refuses_before_any_call(tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "1", "question": "Which?", "choices": ["a", "b"],
                                     "answer": "A"}) + "\n")
    with openai_stub() as stub:
        result = _run("--e2e", "--dataset", str(questions), "--llm", stub.spec(),
                      "--out", str(tmp_path / "out"), "--e2e-cache", str(tmp_path / "c.sqlite"),
                      "--backend-option", "acemad.n_agents=1e400", module="training.evaluate")
        assert stub.calls == 0
    assert result.returncode == 2
    assert "--backend-option acemad.n_agents: must be an integer in [2, 64], got '1e400'" in \
        _one_error_line(result, "python -m training.evaluate: error: ")


@pytest.mark.parametrize(("flags", "message"), [
    (["--max-concurrency", "١٢"], "--max-concurrency: must be an integer in [1, 4096]"),
    (["--request-timeout", "1e308"], "--request-timeout: must be a finite number in (0, 86400]"),
])
def test_serve_flags_refuse_before_binding(flags, message):
    result = _run("serve", "--port", "0", *flags)
    assert result.returncode == 2
    assert message in _one_error_line(result, "imad serve: error: ")


def test_a_debate_without_an_answer_ends_with_an_error_line_and_exit_3():
    with openai_stub(reply="I cannot say.") as stub:
        result = _run("debate", *QUESTION, "--backend", "cot", "--llm", stub.spec())
        assert stub.calls == 1
    assert result.returncode == 3
    assert "answer: (none)" in result.stdout
    assert "the cot debate produced no answer" in _one_error_line(result, "imad debate: error: ")


def test_a_closed_stdout_pipe_ends_quietly():
    with openai_stub() as stub:
        process = subprocess.Popen(
            [sys.executable, "-m", "imad.cli.main", "debate", *QUESTION, "--backend", "cot",
             "--llm", stub.spec(), "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO_ROOT, env=ENV)
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.read(10)  # what `| head -c 10` reads, then the reader goes away
        process.stdout.close()
        status = process.wait(timeout=240)
        stderr = process.stderr.read().decode()
    assert status in (0, 141), stderr
    assert stderr == ""


@pytest.mark.parametrize(("module", "arguments"), [
    ("imad.cli.main", ["serve", "--port", "٨٠٠٠"]),
    ("imad.cli.main", ["ask", *QUESTION, "--target-trigger-rate", "0.3", "--budget-window", "١٢"]),
    ("imad.cli.main", ["critique", *QUESTION, "--max-tokens", "١٢٨"]),
    ("training.evaluate", ["--dataset", "arc_challenge", "--limit", "１０"]),
    ("training.corpus", ["--dataset", "arc_challenge", "--max-tokens", "５１２"]),
])
def test_integer_flags_take_ascii_digits_only(module, arguments):
    """`int('١٢')` is 12: argparse's plain `type=int` took Arabic-Indic and full-width digits."""
    result = _run(*arguments, module=module)
    assert result.returncode == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "error:" in last and "invalid ascii_int value" in last, result.stderr
