"""Certify on a real shadow log: `imad serve --shadow --decision-log X` answers, every answer gets
a label through the feedback endpoint, and `imad calibrate --certify --log X --json` prints the
certificate the library gives on the same rows (τ, n, kept and bound equal). Then the certified
router is served: /health names its certificate, /v1/imad/stats the live check of its promise,
/metrics the certified α and whether the check rejects it."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import httpx
import pytest

pytest.importorskip("fastapi")

from imad.decide.certify import Certificate, LabelSource, certify, live_check  # noqa: E402
from imad.decision_log import open_for_reading  # noqa: E402
from imad.router import Router  # noqa: E402
from imad.router.certified import router_of  # noqa: E402
from imad.serve.metrics import sample_values  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402
from tests.router.router_helpers import make_router  # noqa: E402
from tests.serve.test_shadow_serving import TAU, varied_respond  # noqa: E402
from tests.support.serve_process import ServeProcess, upstream_stub  # noqa: E402

pytestmark = pytest.mark.slow

REQUESTS = 120


def test_certify_on_a_shadow_log_equals_the_library(tmp_path):
    router_dir = make_router(seed=11).save(tmp_path / "router")
    log = tmp_path / "decisions.db"
    rng = random.Random(5)
    with upstream_stub(varied_respond) as upstream:
        server = ServeProcess(router_dir, upstream, tmp_path, "--shadow", "--decision-log", str(log),
                              "--tau", TAU, "--no-scoring-process")
        try:
            server.wait_ready()
            for index in range(1, REQUESTS + 1):
                response = server.post(index)
                assert response.status_code == 200
                p = response.json()["imad"]["p"]
                right = rng.random() < min(1.0, max(0.0, (p - 0.44) * 15))
                answered = httpx.post(f"{server.url}/v1/imad/feedback", timeout=60, json={
                    "id": response.headers["x-request-id"], "correct": right, "source": "gold"})
                assert answered.status_code == 200, answered.text
        finally:
            server.stop()
    store = open_for_reading(log)
    rows = list(store.rows())
    store.close()
    assert len(rows) == REQUESTS and all(row["correct"] is not None for row in rows)
    times = [row["time"] for row in rows]
    expected = certify([row["p"] for row in rows], [int(row["correct"]) for row in rows], alpha=0.3,
                       traffic=[row["p"] for row in rows], router=router_of(Router.load(router_dir)),
                       labels=LabelSource(f"decision log {log}", min(times), max(times)))
    assert isinstance(expected, Certificate)
    done = subprocess.run([sys.executable, "-m", "imad.cli.main", "calibrate", "--router",
                           str(router_dir), "--certify", "--max-error", "0.3", "--log", str(log),
                           "--out", str(tmp_path / "certified"), "--json"],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)["certificate"]
    assert (printed["tau"], printed["labelled"], printed["kept"], printed["upper_bound"]) == (
        expected.tau, expected.labelled, expected.kept, expected.upper_bound)
    assert printed == expected.to_dict()
    assert Router.load(tmp_path / "certified").config.threshold.tau == expected.tau
    served_certificate(tmp_path, expected, log)


def served_certificate(tmp_path, expected: Certificate, log) -> None:
    """The certified router, served: /health names its certificate; /v1/imad/stats adds the live
    check, read from the decision log's labels of the answers it kept."""
    with upstream_stub(varied_respond) as upstream:
        server = ServeProcess(tmp_path / "certified", upstream, tmp_path, "--decision-log", str(log),
                              "--no-scoring-process")
        try:
            server.wait_ready()
            assert server.health()["certificate"] == {
                "alpha": 0.3, "delta": 0.05, "tau": expected.tau, "labelled": expected.labelled,
                "hash": expected.hash}
            kept = 0
            for index in range(200, 240):
                response = server.post(index)
                info = response.json()["imad"]
                kept += not info["escalated"]
                httpx.post(f"{server.url}/v1/imad/feedback", timeout=60, json={
                    "id": response.headers["x-request-id"], "correct": False}).raise_for_status()
            stats = httpx.get(f"{server.url}/v1/imad/stats", timeout=60).json()
            metrics = server.metrics()
        finally:
            server.stop()
    live = stats["certificate"]["live_check"]
    assert stats["certificate"]["hash"] == expected.hash
    assert 7 <= kept < 40 and live["labels"] == kept and live["errors"] == kept, kept
    assert live["violated"] is live_check([1] * kept, 0.3, 0.05).violated is True
    assert list(sample_values(metrics, "imad_certificate_alpha")) == [({}, 0.3)]
    assert list(sample_values(metrics, "imad_certificate_violated")) == [({}, float(live["violated"]))]
    said = server.events("certificate_violated")
    assert len(said) == int(live["violated"])
    assert all(line["certificate"] == expected.hash and "violated at label" in line["evidence"]
               for line in said)
