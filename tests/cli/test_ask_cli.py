"""`imad ask`: the README's main job, on the embedded model."""

from __future__ import annotations

import json

import pytest

from imad.cli.main import main
from tests.router.router_helpers import make_router


@pytest.fixture
def router_dir(tmp_path):
    return make_router().save(tmp_path / "router")


def test_missing_router_is_a_clear_error(tmp_path, capsys):
    assert main(["ask", "Why?", "--router", str(tmp_path / "nowhere")]) == 3
    assert "no router checkpoint directory" in capsys.readouterr().err


def test_bad_backend_is_a_clear_error(router_dir, capsys):
    assert main(["ask", "Why?", "--router", str(router_dir), "--backend", "shouting"]) == 2
    assert "unknown debate back-end 'shouting'" in capsys.readouterr().err


@pytest.mark.llm
def test_ask_kept_with_tau_zero(router_dir, capsys):
    code = main(["ask", "Which drug is an opioid?", "--choices", "Aspirin", "Morphine",
                 "--router", str(router_dir), "--tau", "0", "--json", "--trace"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert result["escalated"] is (result["critique"]["status"] != "ok")
    assert result["total_tokens"] == sum(c["prompt_tokens"] + c["completion_tokens"] for c in result["trace"])
    if not result["escalated"]:
        assert result["answer"] in ("A", "B") and result["llm_calls"] == 1
