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


@pytest.fixture
def scripted_llm(monkeypatch):
    """`--llm` of any spec answers with the recorded-style scripted self-critique (no model)."""
    from imad.llm.scripted import ScriptedChat
    from tests.test_pipeline import scripted

    chat = ScriptedChat(scripted)
    monkeypatch.setattr("imad.llm.spec.chat_model_from_spec", lambda spec: chat)
    return chat


def ask(router_dir, *flags):
    return main(["ask", "Which drug is an opioid?", "--choices", "Aspirin", "Ibuprofen",
                 "Paracetamol", "Morphine", "--router", str(router_dir), "--backend", "cot", *flags])


def test_budget_state_persists_across_runs(router_dir, tmp_path, scripted_llm, capsys):
    state = tmp_path / "budget.json"
    for run in range(3):
        assert ask(router_dir, "--target-trigger-rate", "0.5", "--budget-window", "4",
                   "--budget-state", str(state), "--json") == 0
        decision = json.loads(capsys.readouterr().out)["decision"]
        saved = json.loads(state.read_text())
        assert saved["observed_total"] == run + 1 and len(saved["answers"]) == run + 1
    # window 4 → a warm-up of 2 scores; the third run decides with the budget's τ.
    assert decision["tau_source"] == "budget"
    assert ask(router_dir, "--budget-state", str(state)) == 0  # the rate comes from the file
    out = capsys.readouterr().out
    assert "tau_source budget" in out and "target 0.5 (state in" in out
    assert json.loads(state.read_text())["observed_total"] == 4


@pytest.mark.parametrize(("flags", "message"), [
    (["--target-trigger-rate", "0.2"], "--budget-state: imad ask answers one question per process"),
    (["--budget-state", "STATE"], "--target-trigger-rate: "),
    (["--target-trigger-rate", "1.5", "--budget-state", "STATE"], "--target-trigger-rate: must be"),
    (["--target-trigger-rate", "0.2", "--budget-window", "0", "--budget-state", "STATE"],
     "--budget-window: must be"),
    (["--ood-policy", "escalate"], "--ood-policy: 'escalate' needs OOD statistics"),
])
def test_bad_budget_flags_name_the_flag(router_dir, tmp_path, scripted_llm, capsys, flags, message):
    flags = [str(tmp_path / "state.json") if flag == "STATE" else flag for flag in flags]
    assert ask(router_dir, *flags) == 2
    assert message in capsys.readouterr().err
    assert scripted_llm.calls == [] and not (tmp_path / "state.json").exists()


def test_damaged_budget_state_is_refused_and_kept(router_dir, tmp_path, scripted_llm, capsys):
    state = tmp_path / "state.json"
    state.write_text('{"answers": "oops"}')
    assert ask(router_dir, "--budget-state", str(state)) == 2
    assert "--budget-state:" in capsys.readouterr().err
    assert state.read_text() == '{"answers": "oops"}' and scripted_llm.calls == []


def test_state_of_another_rate_is_refused(router_dir, tmp_path, scripted_llm, capsys):
    state = tmp_path / "state.json"
    assert ask(router_dir, "--target-trigger-rate", "0.2", "--budget-state", str(state)) == 0
    capsys.readouterr()
    assert ask(router_dir, "--target-trigger-rate", "0.3", "--budget-state", str(state)) == 2
    assert "0.3 differs from the 0.2 saved in" in capsys.readouterr().err


def test_text_report_shows_tau_source_and_ood(tmp_path, scripted_llm, capsys):
    import numpy as np

    from imad.router.ood import MahalanobisOOD

    router = make_router(tau=0.0)
    n = len(router.feature_names)
    router = router.with_ood(MahalanobisOOD(1e-6, np.full(n, 50.0), np.eye(n), 0.0))
    path = router.save(tmp_path / "ood-router")
    assert ask(path, "--ood-policy", "escalate") == 0
    out = capsys.readouterr().out
    decision = next(line for line in out.splitlines() if line.startswith("decision: "))
    assert "escalate yes" in decision and "tau_source checkpoint" in decision
    assert "ood yes, ood_policy escalate, would_escalate n/a, backend cot" in decision
    assert "(ood_policy escalate)" in out  # the reason line


@pytest.mark.llm
def test_ask_with_the_embedded_model_the_default_router_and_a_budget_state(tmp_path, capsys):
    state = tmp_path / "budget.json"
    code = main(["ask", "Is aspirin an opioid?", "--task-type", "yes_no_maybe", "--backend", "cot",
                 "--target-trigger-rate", "0.3", "--budget-state", str(state), "--json"])
    result = json.loads(capsys.readouterr().out)
    decision = result["decision"]
    assert code == 0 and decision["tau_source"] == "checkpoint"  # the first answer: warm-up
    assert json.loads(state.read_text())["observed_total"] == 1
    if decision["score_status"] == "scored":  # imad-router-v2 ships OOD statistics
        assert decision["ood_score"] > 0 and isinstance(decision["ood"], bool)
    assert decision["ood_policy"] == "flag"
