"""The `imad` command line: help, version, the critique command and its errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from imad import __version__
from imad.cli.main import main


def test_version(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.strip() == f"imad {__version__}"


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "critique" in out and "escalate" in out


def test_console_script_is_installed():
    result = subprocess.run([sys.executable, "-m", "imad.cli.main", "--version"],
                            capture_output=True, text=True, check=True)
    assert result.stdout.strip() == f"imad {__version__}"


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_empty_question_is_a_clear_error(capsys):
    assert main(["critique", "  "]) == 2
    assert "question text is empty" in capsys.readouterr().err


def test_bad_llm_spec_is_a_clear_error(capsys):
    assert main(["critique", "Why?", "--llm", "banana"]) == 2
    assert "unknown back-end 'banana'" in capsys.readouterr().err


@pytest.mark.llm
def test_critique_with_the_embedded_model(capsys):
    code = main(["critique", "Which drug is an opioid?", "--choices", "Aspirin", "Morphine",
                 "Paracetamol", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == (0 if result["status"] == "ok" else 3)
    assert result["status"] in ("ok", "parse_error", "truncated")
    assert result["prompt_tokens"] > 50 and result["model_id"] == "SmolLM2-135M-Instruct-Q4_1"
    if result["status"] == "ok":
        assert result["response"]["final_answer"] in ("A", "B", "C")
