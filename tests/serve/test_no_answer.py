"""Issue 33: "is there an answer?" is decided once, in the pipeline, and `imad ask` and
`imad serve` agree on it — tried with one loopback upstream whose self-critique cannot be
parsed and whose debate agents give no answer.

The choice, documented in `imad.pipeline`: a debate that ends without an answer is a failed
debate, so the self-critique's answer is served with the reason recorded (source
`single_agent_fallback`); only when no answer is left is the run failed — `imad ask` prints
`error: no answer was produced: …` and exits 3, the server answers 502 `no_usable_answer`.
Before, the CLI exited 3 while the server answered 200 with empty content.
"""

from __future__ import annotations

import httpx
import pytest

from imad.cli.main import main
from imad.llm.spec import chat_model_from_spec
from imad.serve.factory import PipelineFactory
from tests.router.router_helpers import make_router
from tests.serve.conftest import API_KEY
from tests.support.openai_stub import openai_stub
from tests.support.serving import SMALL_DEBATES

QUESTION = "Which drug is an opioid?"
CHOICES = ["Aspirin", "Ibuprofen", "Paracetamol", "Morphine"]


@pytest.fixture
def no_answer_upstream(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stub")
    with openai_stub(critique_content="not a self-critique",
                     debate_content="I cannot say.") as served:
        yield served


def test_ask_and_serve_agree_when_no_answer_is_left(no_answer_upstream, start_server, tmp_path,
                                                     capsys):
    llm, served = no_answer_upstream
    router = make_router().save(tmp_path / "router")
    status = main(["ask", QUESTION, "--choices", *CHOICES, "--router", str(router), "--llm", llm,
                   "--backend", "acemad"])
    captured = capsys.readouterr()
    assert status == 3 and "Traceback" not in captured.err
    assert captured.err.count("\n") == 1 and "imad ask: error: no answer was produced: " in captured.err
    assert "the debate gave no answer (acemad: " in captured.err
    assert "answer: (none)" in captured.out
    asked = served.requests

    factory = PipelineFactory(make_router(), chat_model_from_spec(llm), SMALL_DEBATES)
    server = start_server(factory=factory)
    reply = httpx.post(f"{server.base_url}/chat/completions", timeout=60,
                       headers={"Authorization": f"Bearer {API_KEY}"},
                       json={"model": "imad-acemad", "imad": {"choices": CHOICES},
                             "messages": [{"role": "user", "content": QUESTION}]})
    assert reply.status_code == 502, reply.text
    error = reply.json()["error"]
    assert error["code"] == "no_usable_answer" and "the debate gave no answer (acemad: " in error["message"]
    assert served.requests > asked  # the server asked the same upstream
