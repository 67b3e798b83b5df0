"""Issue 32 item 1's goals, as a user meets them: a real `imad serve --shadow --decision-log X`
process in front of a loopback stub whose self-critiques vary (so p varies around τ).

- Shadow mode: 120 requests make exactly 120 upstream calls (no debate), responses say
  `would_escalate` true for some and false for others (body and header), feedback labels 90
  of them (an unknown id is a 404), and `imad report --json` counts 120 rows, 90 labelled, with
  the AUROC scikit-learn computes from the same responses' p and labels.
- `--shadow-debate-rate 0.5`: the seeded half of the ids (and only it) gets a debate after its
  response; the stub sees those debates' calls beside the 120, and each sampled row carries the
  debate's answer and tokens.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sklearn")

from sklearn.metrics import roc_auc_score  # noqa: E402

from imad.decision_log import open_for_reading  # noqa: E402
from imad.serve.metrics import sample_values  # noqa: E402
from imad.shadow import ShadowSampler  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402
from tests.router.router_helpers import make_router  # noqa: E402
from tests.support.serve_process import ServeProcess, upstream_stub, wait_for  # noqa: E402
from tests.support.serving import echo_respond, tag_of  # noqa: E402

pytestmark = pytest.mark.slow

REQUESTS = 120
TAU = "0.49"
"""Inside the range of p this router gives the varied self-critiques (about 0.45 to 0.53)."""


def varied_respond(request) -> str:
    """Self-critiques whose confidence, hedging and length follow the tag; debate answers that
    differ from the single answer for every fourth tag."""
    index = int(tag_of(request))
    properties = (request.json_schema or {}).get("properties", {})
    if "critique" not in properties:
        reply = json.loads(echo_respond(request))
        if "answer" in reply and index % 4 == 0:
            reply["answer"] = "0"
        return json.dumps(reply)
    confidence = 5 + (index * 37) % 91
    return json.dumps({
        "initial_answer": str(index),
        "initial_reasoning": f"The tag reads {index}." + " perhaps I am not sure" * (index % 4),
        "critique": "One might misread the tag." + " It could be wrong, unclear." * (index % 5),
        "alternative_answer": "0" if index % 3 else str(index), "final_answer": str(index),
        "confidence_initial": confidence, "confidence_critique": 100 - confidence})


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router(seed=11).save(tmp_path_factory.mktemp("router") / "router")


def rows_by_id(path) -> dict[str, dict]:
    store = open_for_reading(path)
    try:
        return {row["response_id"]: row for row in store.rows()}
    finally:
        store.close()


def ask_all(server: ServeProcess) -> list[httpx.Response]:
    responses = [server.post(index) for index in range(1, REQUESTS + 1)]
    assert [response.status_code for response in responses] == [200] * REQUESTS
    return responses


def test_shadow_mode_observes_then_the_report_card_grades_the_gate(router_dir, tmp_path):
    log = tmp_path / "decisions.db"
    with upstream_stub(varied_respond) as upstream:
        server = ServeProcess(router_dir, upstream, tmp_path, "--shadow", "--decision-log", str(log),
                              "--tau", TAU, "--no-scoring-process")
        try:
            server.wait_ready()
            responses = ask_all(server)
            assert upstream.calls == {"critique": REQUESTS, "debate": 0}
            infos = [response.json()["imad"] for response in responses]
            headers = [json.loads(response.headers["x-imad-decision"]) for response in responses]
            assert [info["would_escalate"] for info in infos] == [h["would_escalate"] for h in headers]
            would = [info["would_escalate"] for info in infos]
            assert 0 < sum(would) < REQUESTS  # the gate would have escalated some, kept others
            for info in infos:
                assert info["escalated"] is False and info["source"] == "single_agent"
                assert info["would_escalate"] is (info["p"] < info["tau"])
            rng = random.Random(5)
            labels = {}
            for response, info in zip(responses[:90], infos[:90], strict=True):
                labels[response.headers["x-request-id"]] = rng.random() < info["p"] * 1.6 - 0.3
                answered = httpx.post(f"{server.url}/v1/imad/feedback", timeout=60, json={
                    "id": response.headers["x-request-id"],
                    "correct": labels[response.headers["x-request-id"]], "source": "gold"})
                assert answered.status_code == 200, answered.text
            unknown = httpx.post(f"{server.url}/v1/imad/feedback", timeout=60,
                                 json={"id": "chatcmpl-unknown", "correct": True})
            assert unknown.status_code == 404
            text = server.metrics()
            counted = {labels_["would_escalate"]: value
                       for labels_, value in sample_values(text, "imad_shadow_decisions_total")}
            assert counted == {"true": float(sum(would)), "false": float(REQUESTS - sum(would))}
        finally:
            server.stop()
    rows = rows_by_id(log)
    assert len(rows) == REQUESTS
    row = rows[responses[0].headers["x-request-id"]]
    assert row["escalated"] is False and row["would_escalate"] is infos[0]["would_escalate"]
    assert len(row["features"]) == 41  # every feature, not only the decision's cues
    report = subprocess.run([sys.executable, "-m", "imad.cli.main", "report", "--log", str(log),
                             "--json"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert report.returncode == 0, report.stderr
    card = json.loads(report.stdout)
    p_of = {response.headers["x-request-id"]: info["p"] for response, info in zip(responses, infos,
                                                                                    strict=True)}
    expected = roc_auc_score([labels[key] for key in labels], [p_of[key] for key in labels])
    assert (card["rows"], card["labelled"]) == (REQUESTS, 90)
    assert card["auroc"] == pytest.approx(expected, abs=1e-6)


def shadow_debates_done(server: ServeProcess) -> bool:
    """Whether every shadow debate the server took has ended (run, failed or dropped)."""
    stats = httpx.get(f"{server.url}/v1/imad/stats", timeout=30).json()["shadow_debates"]
    return stats["submitted"] == stats["run"] + stats["failed"] + stats["dropped"]


def total(text: str, name: str, **labels: str) -> float:
    return sum(value for found, value in sample_values(text, name)
               if all(found.get(key) == wanted for key, wanted in labels.items()))


def test_a_sampled_half_is_debated_after_its_response(router_dir, tmp_path):
    log = tmp_path / "decisions.db"
    with upstream_stub(varied_respond) as upstream:
        server = ServeProcess(router_dir, upstream, tmp_path, "--shadow", "--decision-log", str(log),
                              "--tau", TAU, "--no-scoring-process", "--shadow-debate-rate", "0.5",
                              "--shadow-seed", "7")
        try:
            server.wait_ready()
            responses = ask_all(server)
            wait_for(lambda: shadow_debates_done(server), "every sampled shadow debate ended")
            text = server.metrics()
            debate_calls = upstream.calls["debate"]
        finally:
            assert server.stop() in (0, -15)  # SIGTERM: the queued shadow debates finish first
        assert upstream.calls["critique"] == REQUESTS and upstream.calls["debate"] == debate_calls
    # shadow debates are paid for in the metrics: their calls are upstream calls, their tokens a phase
    assert total(text, "imad_upstream_request_duration_seconds_count") == REQUESTS + debate_calls
    assert total(text, "imad_tokens_total", phase="shadow_debate", kind="prompt") == 10 * debate_calls
    assert total(text, "imad_tokens_total", phase="debate", kind="prompt") == 0
    sampler = ShadowSampler(0.5, seed=7)
    ids = [response.headers["x-request-id"] for response in responses]
    sampled = {key for key in ids if sampler.chosen(key)}
    assert 30 < len(sampled) < 90
    rows = rows_by_id(log)
    assert {key for key, row in rows.items() if row["shadow_debate"]} == sampled
    for key in ids:
        row = rows[key]
        assert row["served"] == "single_agent" and row["escalated"] is False
        if key in sampled:
            assert row["debate_answer"] is not None and row["debate_prompt_tokens"] > 0
        else:
            assert row["debate_answer"] is None and row["debate_prompt_tokens"] == 0
    # the stub answers every call with 10 prompt tokens: the debates' calls are all the rows hold
    assert debate_calls == sum(rows[key]["debate_prompt_tokens"] for key in sampled) // 10 > 0
    changed = [key for key in sampled if rows[key]["debate_answer"] != rows[key]["single_answer"]]
    assert changed  # every fourth tag's debate answers differently
