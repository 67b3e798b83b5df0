"""`imad ask --decision-log PATH` through the real CLI with a loopback OpenAI-compatible stub
(issue 32 item 2): the run is one row of the log — the schema's log view — under the id stderr
names; bad flags and files that are not a decision log are refused before any LLM call."""

from __future__ import annotations

import hashlib
import re
import sqlite3

import pytest

from imad.cli.main import main
from imad.decision_log.columns import LOG_COLUMNS
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
    with openai_stub() as served:
        yield served


def ask(router_dir: str, llm: str, *flags: str) -> int:
    return main(["ask", *QUESTION, "--router", router_dir, "--backend", "cot", "--llm", llm, *flags])


@pytest.mark.parametrize("tau", ["0", "1"])
def test_a_run_is_one_row_of_the_log(router_dir, stub, tmp_path, capsys, tau):
    llm, _ = stub
    log = tmp_path / "decisions.db"
    assert ask(router_dir, llm, "--tau", tau, "--decision-log", str(log)) == 0
    err = capsys.readouterr().err
    decision_id = re.search(r"decision logged as (ask-[0-9a-f]{32}) in ", err).group(1)
    assert ask(router_dir, llm, "--tau", tau, "--decision-log", str(log), "--log-text") == 0
    store = open_for_reading(log)
    rows = list(store.rows())
    store.close()
    assert len(rows) == 2 and rows[0]["response_id"] == decision_id
    first, second = rows
    assert set(first) >= {column.name for column in LOG_COLUMNS}
    assert first["escalated"] is (tau == "1") and first["served"] == ("debate" if tau == "1"
                                                                       else "single_agent")
    assert (first["served_model"], first["backend"], first["policy_rule"]) == (llm, "cot", "fixed")
    assert first["tau"] == float(tau) and first["tau_source"] == "request"
    assert first["question"] is None and second["question"] == QUESTION[0]
    assert first["question_sha256"] == hashlib.sha256(QUESTION[0].encode()).hexdigest()
    assert first["single_answer"].startswith("sha256:") and second["single_answer"] == "D"
    assert 0.0 <= first["raw"] <= 1.0 and first["critique_prompt_tokens"] > 0


def foreign(path):
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (x)")
    connection.commit()
    connection.close()


@pytest.mark.parametrize(("flags", "status", "message"), [
    (["--log-text"], 2, "--log-text: applies to the decision log"),
    (["--decision-log-max-rows", "3"], 2, "--decision-log-max-rows: applies to the decision log"),
    (["--decision-log", "LOG", "--decision-log-max-rows", "0"], 2, "--decision-log-max-rows: must be"),
    (["--decision-log", "FOREIGN"], 3, "is a SQLite database but not an imad decision log"),
    (["--decision-log", "DIR"], 3, "is a directory"),
])
def test_bad_decision_log_flags_make_no_call(router_dir, stub, tmp_path, capsys, flags, status,
                                             message):
    llm, served = stub
    foreign(tmp_path / "foreign.db")
    (tmp_path / "dir").mkdir()
    paths = {"LOG": str(tmp_path / "log.db"), "FOREIGN": str(tmp_path / "foreign.db"),
             "DIR": str(tmp_path / "dir")}
    assert ask(router_dir, llm, *[paths.get(flag, flag) for flag in flags]) == status
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("error:") == 1
    assert served.requests == 0 and not (tmp_path / "log.db").exists()
