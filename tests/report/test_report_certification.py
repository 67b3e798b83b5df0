"""`imad report`'s certification section: the curve with its bound, the certified and naive
points and the feasibility line; the certificate of `--certificate DIR` with the live check of its
promise on the labels that came after it (violated when the kept error jumps)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from imad.cli.main import main
from imad.decide.certify import Certificate, certify
from imad.decision_log import DecisionLog
from imad.decision_log.labels import Label, set_label
from imad.decision_log.location import open_for_reading
from imad.report.certification import certification_section
from imad.router import Router
from tests.cli.test_calibrate_certify import write_log
from tests.decision_log.rows import decision_row
from tests.router.router_helpers import make_router


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router().save(tmp_path_factory.mktemp("router") / "router")


def log_rows(log):
    store = open_for_reading(log)
    try:
        return list(store.rows())
    finally:
        store.close()


def test_the_section_at_an_asked_error_matches_the_library(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir))
    assert main(["report", "--log", str(log), "--max-error", "0.2", "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["certificate"] is None
    assert "no router with a certificate" in card["certification"]["certificate_note"]
    section = card["certification"]
    rows = [row for row in log_rows(log) if row["correct"] is not None]
    p = np.array([row["p"] for row in rows])
    right = np.array([int(row["correct"]) for row in rows])
    expected = certify(p, right, alpha=0.2, traffic=[row["p"] for row in log_rows(log)])
    assert isinstance(expected, Certificate) and section["certified"]["tau"] == expected.tau
    mu = 1 - right.mean()
    assert section["base_error"] == pytest.approx(mu)
    assert section["feasibility"]["least_escalation"] == pytest.approx(max(0, (mu - 0.2) / 0.8))
    point = next(c for c in section["curve"] if c["tau"] == 0.5)
    assert point["kept_share"] == pytest.approx(np.mean(p >= 0.5))
    assert point["kept_error"] == pytest.approx(1 - right[p >= 0.5].mean())
    naive = section["naive"]
    assert naive["kept_error"] <= 0.2 and naive["tau"] <= expected.tau


def test_the_certificate_and_its_live_check_flag_a_jump(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    router = Router.load(router_dir)
    write_log(log, router)
    certified = tmp_path / "certified"
    assert main(["calibrate", "--router", str(router_dir), "--certify", "--max-error", "0.2",
                 "--log", str(log), "--out", str(certified), "--json"]) == 0
    certificate = json.loads(capsys.readouterr().out)["certificate"]
    later = [{**decision_row(1000 + index, shadow=True), "p": 0.99, "raw": 0.99,
              "router_name": "certified"} for index in range(300)]
    with DecisionLog(log) as writer:
        for row in later:
            writer.record(row)
    store = open_for_reading(log, writable=True)
    for index, row in enumerate(later):  # kept answers, 60% wrong: far above the promised 20%
        set_label(store, Label(row["response_id"], index % 5 < 2))
    store.close()
    assert main(["report", "--log", str(log), "--certificate", str(certified), "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["certificate"]["hash"] == certificate["hash"]
    live = card["certificate"]["live_check"]
    assert live["labels"] == 300 and live["errors"] == 180 and live["violated"]
    assert card["certification"]["alpha"] == 0.2
    assert main(["report", "--log", str(log), "--certificate", str(certified)]) == 0
    text = capsys.readouterr().out
    assert "## Certified threshold" in text and "**VIOLATED**" in text


def test_a_router_without_certificate_says_so(router_dir, tmp_path):
    entry, section = certification_section([], certificate=None, why_none="no certificate here")
    assert entry is None and section["certificate_note"] == "no certificate here"
    assert "--max-error" in section["note"]
