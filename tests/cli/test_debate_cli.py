"""`imad debate "QUESTION" --choices … --backend … [--llm SPEC] [--json]`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from imad.cli.debate import parse_overrides
from imad.cli.main import main
from imad.errors import ConfigError
from imad.llm.scripted import ScriptedChat

QUESTION = ["Which drug is an opioid?", "--choices", "Aspirin", "Morphine", "Ibuprofen"]


def _reply(request):
    properties = request.json_schema["properties"]
    data = {"argument": "It binds opioid receptors.", "answer": "B", "confidence": 90,
            "self_belief": {"A": 5, "B": 90, "C": 5}, "peer_prediction": {"A": 10, "B": 80, "C": 10}}
    return json.dumps({k: data[k] for k in properties})


@pytest.fixture
def scripted(monkeypatch):
    chat = ScriptedChat(_reply)
    monkeypatch.setattr("imad.llm.spec.chat_model_from_spec", lambda spec: chat)
    return chat


def test_json_output(scripted, capsys):
    code = main(["debate", *QUESTION, "--backend", "acemad", "--set", "n_agents=3",
                 "--set", "n_rounds=2", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["final_answer"] == "B" and data["backend"] == "acemad"
    assert len(data["trace"]) == 6 == len(scripted.calls)
    assert data["prompt_tokens"] == sum(c["prompt_tokens"] for c in data["trace"])
    assert data["messages"] == 6


def test_text_output(scripted, capsys):
    assert main(["debate", *QUESTION, "--backend", "mad"]) == 0
    out = capsys.readouterr().out
    assert "answer: B. Morphine" in out and "stopped: rounds_done" in out
    assert "round 1: agent_0=B, agent_1=B, agent_2=B" in out


def test_bad_override_is_a_clean_error(scripted, capsys):
    assert main(["debate", *QUESTION, "--backend", "svrmad", "--set", "accept_threshold=2"]) == 2
    assert "--set accept_threshold: must be a finite number in (0, 1]" in capsys.readouterr().err
    assert main(["debate", *QUESTION, "--set", "nonsense"]) == 2


def test_parse_overrides():
    assert parse_overrides(["n_agents=3", "eta=0.5", "show_influence=false", "aggregation=hard"]) \
        == {"n_agents": 3, "eta": 0.5, "show_influence": False, "aggregation": "hard"}
    assert parse_overrides(["score_rule=survival"], "svrmad") == {"score_rule": "survival"}
    with pytest.raises(ConfigError):
        parse_overrides(["=3"])


def test_help_lists_the_backends():
    out = subprocess.run([sys.executable, "-m", "imad.cli.main", "debate", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for name in ("acemad", "svrmad", "cot", "self_consistency", "mad", "liang", "down"):
        assert name in out


@pytest.mark.llm
def test_real_model_cot(capsys):
    code = main(["debate", *QUESTION, "--backend", "cot", "--llm", "local", "--json",
                 "--no-trace"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["final_answer"] in ("A", "B", "C")
    assert data["prompt_tokens"] > 0 and data["completion_tokens"] > 0 and "trace" not in data
