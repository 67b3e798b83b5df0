"""The manual's recipes run as written (issue 13), so they cannot rot.

Each test takes a recipe's code block from README.md or a docs/ page (found by its
`<!-- recipe: NAME -->` marker; tests/test_docs.py checks that every recipe in the docs is run
here) and runs it, changing only addresses and sizes:
(a) the `openai` SDK against a real loopback `imad serve` app with the shipped router and a
    scripted model (the server's own tests cover the embedded model);
(b) the Python recipe with `my_llm` returning a recorded answer of the embedded model, and a
    scripted debate model, once as written and once with τ = 1 so the debate branch runs;
(c) the three commands, as subprocesses, against a loopback OpenAI-compatible HTTP server with
    scripted answers, on the first 20 questions of the fixture datasets and 2 training epochs.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from imad.llm.scripted import ScriptedChat
from imad.llm.types import ChatRequest
from imad.router import Router

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MANUAL = (README, *sorted((ROOT / "docs").rglob("*.md")))
FIXTURE_DATA = ROOT / "tests" / "fixtures" / "datasets"
RECORDED = ROOT / "corpus" / "smollm2-135m-instruct-q4_1" / "pubmedqa.jsonl"


def recipe(name: str) -> str:
    """The fenced code block right after `<!-- recipe: name -->` in the README or a docs page."""
    pattern = rf"<!-- recipe: {name} -->\n```\w+\n(.*?)```"
    found = [match.group(1) for page in MANUAL
             for match in re.finditer(pattern, page.read_text(encoding="utf-8"), re.DOTALL)]
    assert found, f"neither README.md nor docs/ has a recipe {name!r}"
    assert len(set(found)) == 1, f"recipe {name!r} is written twice, differently"
    return found[0]


def scripted_answer(request: ChatRequest, answer: str = "yes", confidence: int = 90) -> str:
    """A self-critique or debate reply in the JSON the request's schema asks for."""
    properties = (request.json_schema or {}).get("properties", {})
    if "critique" in properties or not properties:
        return json.dumps({"initial_answer": answer, "initial_reasoning": "Trials show it does.",
                           "critique": "Perhaps maybe: the effect could be small.",
                           "alternative_answer": "maybe", "final_answer": answer,
                           "confidence_initial": confidence, "confidence_critique": 100 - confidence})
    return json.dumps({name: (answer if name == "answer" else confidence if "confidence" in name
                              else f"It is {answer}.") for name in properties})


def run_printing(code: str, namespace: dict[str, object]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - the README's own code
    return out.getvalue()


@pytest.mark.slow
def test_recipe_a_openai_sdk_against_the_routing_server():
    pytest.importorskip("openai")
    from imad.serve import BackgroundServer, PipelineFactory, ServeSettings, create_app
    from tests.support.serving import SMALL_DEBATES

    factory = PipelineFactory(Router.load("imad-router-v1.1"), ScriptedChat(scripted_answer), SMALL_DEBATES)
    settings = ServeSettings(api_key="change-me")
    with BackgroundServer(create_app(settings, factory), settings) as server:
        code = recipe("server").replace("http://127.0.0.1:8080/v1", server.base_url)
        printed = run_printing(code, {}).splitlines()
    assert printed[0] == "yes"
    decision = re.fullmatch(r"p=(\S+) tau=(\S+) escalated=(True|False) \((\w+)\)", printed[1])
    assert decision, printed
    p, tau = float(decision.group(1)), float(decision.group(2))
    assert 0.0 <= p <= 1.0 and tau == Router.load("imad-router-v1.1").config.threshold.tau
    assert decision.group(3) == str(p < tau)


def recorded_text() -> str:
    """The embedded model's raw self-critique of the first parsed PubMedQA corpus record."""
    for line in RECORDED.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["parsed"] is not None:
            return record["raw_response"]
    raise AssertionError("no parsed record in the corpus")


@pytest.mark.parametrize("always_escalate", [False, True])
def test_recipe_b_python_with_your_own_client(always_escalate):
    code = recipe("python")
    if always_escalate:
        code = code.replace("policy = checkpoint_policy(router.config)",
                            "policy = __import__('imad').Policy(__import__('imad').FixedThreshold(1.0))")
    prompts: list[list[dict[str, str]]] = []
    debate_model = ScriptedChat(lambda request: scripted_answer(request, "maybe"))

    def my_llm(messages: list[dict[str, str]]) -> str:
        prompts.append(messages)
        return recorded_text()

    printed = run_printing(code, {"my_llm": my_llm, "debate_model": debate_model}).strip()
    assert len(prompts) == 1 and prompts[0][-1]["role"] == "user"
    assert "Does regular aerobic exercise" in prompts[0][-1]["content"]
    reason, answer = printed.split(" → ")
    assert reason.startswith("p ") and reason.endswith("escalate" if always_escalate else "keep")
    if always_escalate:
        assert answer == "maybe" and len(debate_model.calls) > 0
    else:
        assert debate_model.calls == [] and answer in ("yes", "no", "maybe")


class _ScriptedOpenAIServer(http.server.ThreadingHTTPServer):
    """/v1/chat/completions with scripted self-critiques: right or wrong by a hash of the prompt,
    with a confidence that leans toward the right ones, so the corpus has both labels."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        digest = hashlib.sha256(prompt.encode()).digest()
        answer = ("yes", "no", "maybe", "blue", "left")[digest[0] % 5]
        text = json.dumps({"initial_answer": answer, "initial_reasoning": "Because of the evidence.",
                           "critique": "It could be otherwise.", "alternative_answer": "no",
                           "final_answer": answer, "confidence_initial": 40 + digest[1] % 60,
                           "confidence_critique": 30})
        reply = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": text}}],
                            "usage": {"prompt_tokens": len(prompt.split()),
                                      "completion_tokens": len(text.split())}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


@contextlib.contextmanager
def scripted_openai_server() -> Iterator[_ScriptedOpenAIServer]:
    server = _ScriptedOpenAIServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


SMALL = {"training.corpus": ["--data-dir", str(FIXTURE_DATA), "--limit", "20", "--no-progress"],
         "training.fit": ["--epochs", "2", "--no-feature-cache"],
         "training.calibrate": ["--no-feature-cache"]}


@pytest.mark.slow
def test_recipe_c_a_router_for_your_own_model(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with scripted_openai_server() as server:
        for line in recipe("train").strip().splitlines():
            words = shlex.split(line.replace("http://127.0.0.1:8000/v1", server.base_url))
            assert words[:2] == ["python", "-m"]
            command = [sys.executable, *words[1:], *SMALL.get(words[2], [])]
            result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
            assert result.returncode == 0, f"{line}\n{result.stderr[-3000:]}"
    corpus = sorted(p.name for p in (tmp_path / "corpus" / "my-model").glob("*.jsonl"))
    assert corpus == ["gqa.jsonl", "pubmedqa.jsonl"]
    router = Router.load(tmp_path / "checkpoints" / "my-router-v1.1")
    assert router.name == "my-router-v1.1" and "target trigger rate 0.2" in router.config.threshold.method
    assert router.metadata["data"]["model_ids"] == ["my-model"]
    assert "checkpoint: checkpoints/my-router-v1.1" in result.stdout


def test_recipe_drift_budget_and_ood_flag_in_a_pipeline():
    """The drift recipe as written, with the shipped v2 router and a scripted model whose stated
    confidence varies by question, so the budget has a spread of scores to take a quantile of."""
    from imad import Question

    def varied(request: ChatRequest) -> str:
        tag = int(re.search(r"#(\d+)", request.messages[-1].text).group(1))
        return scripted_answer(request, confidence=10 + (tag * 37) % 85)

    questions = [Question(f"Is the sample #{i} positive?", task_type="yes_no_maybe") for i in range(70)]
    namespace = {"chat_model": ScriptedChat(varied), "questions": questions}
    code = recipe("drift").replace('"acemad"', '"acemad", backend_options={"n_agents": 2, "n_rounds": 1}')
    lines = run_printing(code, namespace).strip().splitlines()
    decisions = [line.split() for line in lines[:-1]]
    assert len(decisions) == 70
    # budget_window 100 → 50 scores at the checkpoint's τ, then the budget's.
    assert {d[2] for d in decisions[:49]} == {"checkpoint"} and {d[2] for d in decisions[49:]} == {"budget"}
    assert {d[3] for d in decisions} <= {"True", "False"}  # the v2 checkpoint has OOD statistics
    assert namespace["pipeline"].policy.rule is namespace["budget"]
    budget = namespace["budget"].stats()
    assert lines[-1] == (f"escalated {budget.realized_rate:.2f} of the last 70 (target 0.2)")
    assert budget.observed_total == 70


def test_recipe_policy_pipelines_take_a_policy_and_share_the_router():
    namespace: dict[str, object] = {"chat_model": ScriptedChat(scripted_answer)}
    run_printing(recipe("policy"), namespace)
    pipeline, router = namespace["pipeline"], namespace["router"]
    assert pipeline.router is router and pipeline.policy.ood_policy == "escalate"
    assert (pipeline.policy.rule.tau, pipeline.policy.rule.source) == (0.6, "request")
