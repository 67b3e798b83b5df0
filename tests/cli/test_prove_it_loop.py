"""The "Prove it on your traffic" guide followed literally, over a real `imad serve` process in
front of a loopback stub: shadow with a decision log, labels by feedback and `imad log label`,
`imad report`, `imad calibrate --recalibrate auto --log`, hot reload, then more traffic.

- No signal (labels drawn independently of p): `--recalibrate auto` rightly chooses the base
  rate, every p ties, and the checkpoint's τ would escalate every answer: calibrate refuses
  the version, saying what to do, and writes nothing. Forced with `--allow-extreme-rate`, the
  printed rate (1.0) is what the reloaded server then does; `--target-trigger-rate 0.2` on it
  is refused (tied scores cannot meet the target), not a silent "0.0000 (target 0.2000)".
- Signal (labels follow p): the recalibrated version's printed escalation rate is the rate the
  server logs after the reload, within 0.03.
"""

from __future__ import annotations

import json
import random
import re

import httpx
import pytest

pytest.importorskip("fastapi")

from imad.cli.main import main  # noqa: E402
from imad.decision_log import open_for_reading  # noqa: E402
from imad.router import Router  # noqa: E402
from tests.router.router_helpers import make_router  # noqa: E402
from tests.serve.test_shadow_serving import varied_respond  # noqa: E402
from tests.support.serve_process import WAIT_S, ServeProcess, upstream_stub  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.server]

REQUESTS = 120
TAU = 0.49
"""The router's fixed τ: inside the range of p it gives the varied self-critiques (0.45–0.53)."""


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router(seed=11, tau=TAU).save(tmp_path_factory.mktemp("router") / "router")


@pytest.fixture
def upstream():
    with upstream_stub(varied_respond) as stub:
        yield stub


def shadow_traffic(server: ServeProcess, questions: range) -> list[tuple[str, float]]:
    """Ask each tagged question once; each response's completion id and p."""
    answered = []
    for index in questions:
        response = server.post(index)
        assert response.status_code == 200, response.text
        answered.append((response.headers["x-request-id"], response.json()["imad"]["p"]))
    return answered


def label(server: ServeProcess, log, tmp_path, labels: dict[str, bool]) -> None:
    """Half of the labels by POST /v1/imad/feedback, the other half by `imad log label`."""
    ids = sorted(labels)
    for key in ids[::2]:
        answered = httpx.post(f"{server.url}/v1/imad/feedback", timeout=60,
                              json={"id": key, "correct": labels[key], "source": "gold"})
        assert answered.status_code == 200, answered.text
    server.stop()  # the rest by file, as the guide's `imad log label`
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps({"id": key, "correct": labels[key]}) + "\n"
                            for key in ids[1::2]))
    assert main(["log", "label", "--log", str(log), str(path)]) == 0


def reload_and_ask(router_dir, upstream, tmp_path, log, new_version) -> list[dict]:
    """Serve `router_dir`, hot-reload `new_version`, ask the same questions again: the log rows
    the new version made."""
    server = ServeProcess(router_dir, upstream, tmp_path, "--shadow", "--decision-log", str(log),
                          "--no-scoring-process")
    try:
        server.wait_ready()
        reloaded = httpx.post(f"{server.url}/v1/imad/admin/reload",
                              json={"router": str(new_version)}, timeout=WAIT_S)
        assert reloaded.status_code == 200, reloaded.text
        shadow_traffic(server, range(1, REQUESTS + 1))
    finally:
        server.stop()
    name = Router.load(new_version).name
    store = open_for_reading(log)
    try:
        return [row for row in store.rows() if row["router_name"] == name]
    finally:
        store.close()


def printed_rate(out: str) -> float:
    found = re.search(r"escalation rate on the \d+ logged decisions: ([0-9.]+)", out)
    assert found, out
    return float(found.group(1))


def run_guide(router_dir, upstream, tmp_path, capsys, correct_of):
    """Steps 1–3: shadow 120 requests, label 100 (`correct_of(p, rng)`), read the report card;
    the log."""
    log = tmp_path / "decisions.db"
    server = ServeProcess(router_dir, upstream, tmp_path, "--shadow", "--shadow-debate-rate", "0.2",
                          "--decision-log", str(log), "--no-scoring-process")
    try:
        server.wait_ready()
        answered = shadow_traffic(server, range(1, REQUESTS + 1))
        rng = random.Random(5)
        label(server, log, tmp_path, {key: correct_of(p, rng) for key, p in answered[:100]})
    finally:
        server.stop()
    capsys.readouterr()
    assert main(["report", "--log", str(log), "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert (card["rows"], card["labelled"]) == (REQUESTS, 100)
    return log


def test_no_signal_ends_in_a_refusal_not_a_silent_escalate_all(router_dir, upstream, tmp_path,
                                                                capsys):
    log = run_guide(router_dir, upstream, tmp_path, capsys, lambda p, rng: rng.random() < 0.3)
    new_version = tmp_path / "recalibrated"
    assert main(["calibrate", "--router", str(router_dir), "--recalibrate", "auto",
                 "--log", str(log), "--out", str(new_version)]) == 3
    err = capsys.readouterr().err
    assert "would escalate 120/120 (100.0%) of the logged decisions at tau 0.49" in err
    assert "every p is" in err and "it was not written" in err
    for advice in ("Label more answers", "imad calibrate --certify", "keep serving the old router",
                   "--allow-extreme-rate"):
        assert advice in err
    assert not new_version.exists()

    assert main(["calibrate", "--router", str(router_dir), "--recalibrate", "auto", "--log",
                 str(log), "--out", str(new_version), "--allow-extreme-rate"]) == 0
    out = capsys.readouterr().out
    assert "calibrator: base_rate" in out and printed_rate(out) == 1.0
    rows = reload_and_ask(router_dir, upstream, tmp_path, log, new_version)
    assert len(rows) == REQUESTS and all(row["would_escalate"] for row in rows)

    # the whole log now holds this network's rows, the old router's and the new one's alike
    assert main(["calibrate", "--router", str(new_version), "--target-trigger-rate", "0.2",
                 "--log", str(log), "--out", str(tmp_path / "rated")]) == 3
    err = capsys.readouterr().err
    assert "the target trigger rate 0.2000 cannot be met: tied scores allow 0.0000" in err
    assert "imad calibrate --certify" in err and not (tmp_path / "rated").exists()


def test_with_signal_the_printed_rate_is_the_rate_served_after_the_reload(router_dir, upstream,
                                                                         tmp_path, capsys):
    log = run_guide(router_dir, upstream, tmp_path, capsys,
                    lambda p, rng: rng.random() < (p - 0.45) * 12.5)
    new_version = tmp_path / "recalibrated"
    assert main(["calibrate", "--router", str(router_dir), "--recalibrate", "auto",
                 "--log", str(log), "--out", str(new_version)]) == 0
    out = capsys.readouterr().out
    assert "calibrator: base_rate" not in out
    printed = printed_rate(out)
    assert 0.05 < printed < 0.95
    rows = reload_and_ask(router_dir, upstream, tmp_path, log, new_version)
    assert len(rows) == REQUESTS
    served = sum(row["would_escalate"] for row in rows) / len(rows)
    assert abs(served - printed) <= 0.03
