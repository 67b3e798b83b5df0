"""Hostile upstream replies and a doubtful OOD detector (issue 23).

A broken OpenAI-compatible upstream (a loopback stub answering HTTP 200 with the given bytes)
whose reply holds a 5,000-digit integer, 100,000 nested arrays, NaN, 1e999, a lone surrogate or
bad UTF-8 is an `LLMMalformedResponseError`: HTTP 502 from `imad serve`, exit 3 with one `error:`
line from the real `imad ask` command, never a 500 or a traceback. A router whose OOD score is
NaN fails safe under `ood_policy="escalate"` (escalated, the reason recorded) and reports
`ood_score` as null in every JSON output (decision, CLI --json, server body and header).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from imad.router.ood import MahalanobisOOD, fit_mahalanobis
from tests.conftest import REPO_ROOT
from tests.router.router_helpers import make_router
from tests.support.openai_stub import CRITIQUE, openai_stub

pytest.importorskip("fastapi")

API_KEY = "hostile-key-0123456789"
QUESTION = ["Which drug is an opioid?", "--choices", "Aspirin", "Ibuprofen", "Paracetamol",
            "Morphine"]


def completion(usage: str = '{"prompt_tokens": 10, "completion_tokens": 5}',
               content: str = json.dumps(json.dumps(CRITIQUE))) -> bytes:
    return ('{"id": "x", "object": "chat.completion", "model": "m", "choices": [{"index": 0, '
            '"finish_reason": "stop", "message": {"role": "assistant", "content": ' + content
            + '}}], "usage": ' + usage + "}").encode("utf-8")


UPSTREAM_CASES = {
    "usage with a 5000-digit integer": completion('{"prompt_tokens": ' + "9" * 5000 + "}"),
    "usage with a 400-digit integer": completion('{"completion_tokens": ' + "9" * 400 + "}"),
    "100,000 nested arrays as the body": b"[" * 100_000 + b"]" * 100_000,
    "100,000 nested arrays in usage": completion("[" * 100_000 + "]" * 100_000),
    "NaN in usage": completion('{"prompt_tokens": NaN}'),
    "1e999 in usage": completion('{"prompt_tokens": 1e999}'),
    "a lone surrogate in the content": completion(content='"\\ud800"'),
    "bad UTF-8": completion(content='"caf\u00e9"').replace("é".encode(), b"\xe9"),
}


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OPENAI_API_KEY": "stub",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory) -> Path:
    return make_router().save(tmp_path_factory.mktemp("upstream") / "router")


@pytest.mark.parametrize("name", list(UPSTREAM_CASES))
def test_a_broken_upstream_reply_is_a_502_from_imad_serve(router_dir, name):
    from imad.serve import BackgroundServer, PipelineFactory, ServeSettings, create_app

    with openai_stub(raw_body=UPSTREAM_CASES[name]) as (llm, stub):
        settings = ServeSettings(api_key=API_KEY, scoring_processes=0)  # the upstream fails first
        server = BackgroundServer(create_app(settings, PipelineFactory.from_specs(
            router=str(router_dir), llm=llm)), settings).start()
        try:
            response = httpx.post(f"{server.base_url}/chat/completions", timeout=120,
                                  headers={"Authorization": f"Bearer {API_KEY}"},
                                  json={"model": "imad-svrmad-0",
                                        "messages": [{"role": "user", "content": QUESTION[0]}]})
        finally:
            server.stop(timeout_s=15)
    assert response.status_code == 502, response.text
    assert "LLMMalformedResponseError" in response.text or "upstream" in response.text.lower()
    assert stub.requests >= 1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["usage with a 5000-digit integer",
                                  "100,000 nested arrays as the body"])
def test_a_broken_upstream_reply_is_exit_3_with_one_error_line_from_imad_ask(router_dir, name):
    with openai_stub(raw_body=UPSTREAM_CASES[name]) as (llm, stub):
        run = subprocess.run([sys.executable, "-m", "imad.cli.main", "ask", *QUESTION,
                              "--router", str(router_dir), "--backend", "cot", "--llm", llm],
                             capture_output=True, text=True, env=environment(), timeout=300)
    assert run.returncode == 3, run.stderr
    [line] = run.stderr.splitlines()
    assert "error: no answer was produced" in line and "LLMMalformedResponseError" in line
    assert "Traceback" not in run.stderr and "a bug in imad" not in run.stderr
    assert stub.requests == 2  # the self-critique and the debate's opening, no retries


# --- a NaN OOD score ----------------------------------------------------------------------------


def _nan_score(self, rows):
    return np.full(rows.shape[0], math.nan)


def router_with_ood(policy: str):
    rng = np.random.default_rng(3)
    router = make_router(tau=0.0)  # every finite p is kept: only the OOD rule can escalate
    detector = fit_mahalanobis(rng.normal(size=(300, 41)), rng.normal(size=(100, 41)))
    router = router.with_ood(detector)
    return router.with_config(router.config.with_ood_policy(policy))


@pytest.mark.parametrize("policy", ["escalate", "flag"])
def test_a_nan_ood_score_fails_safe_and_is_null(monkeypatch, policy):
    from imad.critique.schema import CritiqueResponse
    from imad.decide import checkpoint_policy

    router = router_with_ood(policy)
    monkeypatch.setattr(MahalanobisOOD, "_score", _nan_score)
    response = CritiqueResponse.from_dict({**CRITIQUE, "confidence_initial": 0.8,
                                           "confidence_critique": 0.7})
    score = router.score("Which drug is an opioid?", response)
    decision = checkpoint_policy(router.config).decide(score)
    assert decision.p is not None and math.isfinite(decision.p)
    assert decision.ood is True and decision.ood_score is None
    assert decision.escalate is (policy == "escalate")
    assert any("OOD score is not a finite number" in reason for reason in decision.reasons)
    assert decision.outcome == ("ood" if policy == "escalate" else "kept")
    json.loads(json.dumps(decision.to_dict(), allow_nan=False))  # strict JSON


def test_a_nan_ood_score_escalates_in_imad_serve_with_null_everywhere():
    from imad.serve import BackgroundServer, ServeSettings, create_app
    from tests.support.serving import echo_factory, tagged_question

    router = router_with_ood("escalate")
    # Damage the loaded detector itself (a patched class would not reach the scoring process,
    # which receives the router pickled): its NaN mean makes every OOD score NaN.
    detector = router.ood_detector
    router._ood = MahalanobisOOD(detector.threshold, np.full_like(detector.mean, math.nan),
                                 detector.covariance, detector.shrinkage)
    settings = ServeSettings(api_key=API_KEY, ood_policy="escalate", scoring_processes=1)
    server = BackgroundServer(create_app(settings, echo_factory(router=router)), settings).start()
    try:
        response = httpx.post(f"{server.base_url}/chat/completions", timeout=60,
                              headers={"Authorization": f"Bearer {API_KEY}"},
                              json={"model": "imad-svrmad-0",
                                    "messages": [{"role": "user", "content": tagged_question(1)}]})
    finally:
        server.stop(timeout_s=15)
    assert response.status_code == 200, response.text
    strict = {"parse_constant": lambda name: pytest.fail(f"{name} in the server's output")}
    info = json.loads(response.text, **strict)["imad"]
    header = json.loads(response.headers["x-imad-decision"], **strict)
    assert (info["ood_score"], info["ood"], info["escalated"]) == (None, True, True)
    assert any("OOD score is not a finite number" in reason for reason in info["reasons"])
    assert (header["ood"], header["escalated"]) == (True, True)
    assert "NaN" not in response.headers["x-imad-decision"] and "NaN" not in response.text


_ASK_WITH_NAN_OOD = """
import math, sys
import numpy as np
from imad.router.ood import MahalanobisOOD
MahalanobisOOD._score = lambda self, rows: np.full(rows.shape[0], math.nan)
from imad.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_nan_ood_score_escalates_in_imad_ask_json_with_null(tmp_path):
    router = router_with_ood("escalate").save(tmp_path / "router")
    with openai_stub() as (llm, _):
        run = subprocess.run([sys.executable, "-c", _ASK_WITH_NAN_OOD, "ask", *QUESTION,
                              "--router", str(router), "--backend", "cot", "--llm", llm,
                              "--ood-policy", "escalate", "--json"],
                             capture_output=True, text=True, env=environment(), timeout=300)
    assert run.returncode == 0, run.stderr
    strict = {"parse_constant": lambda name: pytest.fail(f"{name} in imad ask --json")}
    decision = json.loads(run.stdout, **strict)["decision"]
    assert (decision["ood_score"], decision["ood"], decision["escalate"]) == (None, True, True)
    assert any("OOD score is not a finite number" in reason for reason in decision["reasons"])
