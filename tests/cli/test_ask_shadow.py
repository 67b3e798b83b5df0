"""`imad ask --shadow [--shadow-debate-rate R]` through the real CLI with a loopback stub (issue 32
item 1): the decision is made and reported with `would_escalate`, the single answer is printed and
no debate is called; a sampled run (R 1) debates after printing, and its row carries the debate."""

from __future__ import annotations

import json
import re

import pytest

from imad.cli.main import main
from imad.decision_log.location import open_for_reading
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
    with openai_stub(debate_content=json.dumps({"answer": "A", "reasoning": "A.",
                                                "confidence": 0.9})) as served:
        yield served


def ask(router_dir: str, llm: str, *flags: str) -> int:
    return main(["ask", *QUESTION, "--router", router_dir, "--backend", "cot", "--llm", llm, *flags])


def only_row(path) -> dict:
    store = open_for_reading(path)
    try:
        (row,) = list(store.rows())
    finally:
        store.close()
    return row


@pytest.mark.parametrize(("tau", "would"), [("0", False), ("1", True)])
def test_shadow_reports_the_decision_and_serves_the_single_answer(router_dir, stub, tmp_path,
                                                                  capsys, tau, would):
    llm, served = stub
    log = tmp_path / "decisions.db"
    assert ask(router_dir, llm, "--tau", tau, "--shadow", "--json", "--decision-log", str(log)) == 0
    data = json.loads(capsys.readouterr().out)
    assert served.requests == 1  # the self-critique only: no debate
    assert (data["answer"], data["source"], data["escalated"]) == ("D", "single_agent", False)
    assert data["would_escalate"] is would and data["decision"]["would_escalate"] is would
    row = only_row(log)
    assert (row["would_escalate"], row["escalated"], row["shadow_debate"]) == (would, False, False)
    assert ask(router_dir, llm, "--tau", tau, "--shadow") == 0
    assert f"would_escalate {'yes' if would else 'no'}" in capsys.readouterr().out


def test_without_shadow_would_escalate_is_null(router_dir, stub, capsys):
    llm, _ = stub
    assert ask(router_dir, llm, "--tau", "1", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["would_escalate"] is None and data["escalated"] is True


def test_a_sampled_run_debates_after_printing_its_answer(router_dir, stub, tmp_path, capsys):
    llm, served = stub
    log = tmp_path / "decisions.db"
    assert ask(router_dir, llm, "--tau", "1", "--shadow", "--shadow-debate-rate", "1",
               "--decision-log", str(log), "--log-text", "--backend", "svrmad") == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("answer: D\n")
    decision_id = re.search(r"decision logged as (ask-[0-9a-f]{32})", captured.err).group(1)
    row = only_row(log)
    assert row["response_id"] == decision_id and served.requests > 1
    assert (row["served"], row["single_answer"], row["debate_answer"]) == ("single_agent", "D", "A")
    assert row["shadow_debate"] is True and row["debate_prompt_tokens"] > 0
    assert "shadow debate: ran, changed the answer" in captured.err


def test_rate_zero_never_debates(router_dir, stub, capsys):
    llm, served = stub
    assert ask(router_dir, llm, "--tau", "1", "--shadow", "--shadow-debate-rate", "0") == 0
    assert served.requests == 1 and "shadow debate" not in capsys.readouterr().err
