"""`imad calibrate --recalibrate METHOD --log PATH` (issue 32 item 5): a calibrator fitted on a
decision log's scored decisions, written into a new version whose record names the log, the rows
and their time range; the hostile flag combinations name what is wrong."""

from __future__ import annotations

import json
import random

import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from imad.decision_log.labels import Label, set_label
from imad.decision_log.location import open_for_reading
from imad.router import Router
from tests.decision_log.rows import T0, decision_row
from tests.router.router_helpers import make_router


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router().save(tmp_path_factory.mktemp("router") / "router")


def write_log(path, router_name: str | None, count: int = 120, labelled: int = 80) -> None:
    rng = random.Random(3)
    rows = []
    for index in range(count):
        raw = rng.random()
        rows.append({**decision_row(index), "router_name": router_name, "raw": raw, "p": raw,
                     "served": "single_agent"})
    with DecisionLog(path) as log:
        for row in rows:
            log.record(row)
    store = open_for_reading(path, writable=True)
    for row in rows[:labelled]:  # right more often at a high raw score: a Platt map to fit
        set_label(store, Label(row["response_id"], rng.random() < 0.2 + 0.6 * row["raw"]))
    store.close()


def test_platt_on_a_log_writes_a_version_naming_the_log(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir).name)
    out = tmp_path / "recalibrated"
    assert main(["calibrate", "--router", str(router_dir), "--recalibrate", "platt", "--log", str(log),
                 "--out", str(out), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["method"], record["answers"], record["labelled"]) == ("platt", 120, 80)
    assert str(log) in record["files"][0] and "80 labelled" in record["files"][0]
    assert "2026-11-30T00:53:20Z to 2026-11-30T02:52:20Z" in record["files"][0]  # ISO 8601, UTC
    assert Router.load(out).calibrator.kind == "platt"


def test_since_selects_the_rows(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir).name)
    assert main(["calibrate", "--router", str(router_dir), "--recalibrate", "platt", "--log", str(log),
                 "--since", str(int(T0 + 60 * 60)), "--out", str(tmp_path / "v"), "--json",
                 "--allow-extreme-rate"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["answers"], record["labelled"]) == (60, 20)


def test_tau_for_a_trigger_rate_on_a_log(router_dir, tmp_path, capsys):
    log = tmp_path / "decisions.db"
    write_log(log, Router.load(router_dir).name)
    with DecisionLog(log) as writer:  # one unscored decision: it always escalates
        writer.record({**decision_row(500), "router_name": Router.load(router_dir).name, "p": None})
    assert main(["calibrate", "--router", str(router_dir), "--target-trigger-rate", "0.25",
                 "--log", str(log), "--out", str(tmp_path / "v"), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    store = open_for_reading(log)
    p = sorted(row["p"] for row in store.rows() if row["p"] is not None)
    store.close()
    tau = record["tau"]
    escalated = sum(value < tau for value in p) + 1
    assert escalated == 30 and escalated / 121 <= 0.25 < (escalated + 1) / 121
    assert Router.load(tmp_path / "v").config.threshold.tau == pytest.approx(tau)


@pytest.mark.parametrize(("flags", "status", "message"), [
    (["--recalibrate", "platt", "--log", "LOG", "--corpus", "x.jsonl"], 2, "--log: fit on a decision log"),
    (["--recalibrate", "platt", "--since", "2026-12-01"], 2, "--since: selects decision-log rows"),
    (["--target-trigger-rate", "0.2", "--log", "OTHER"], 3, "holds decisions of router(s) someone-else"),
    (["--recalibrate", "platt", "--log", "LOG", "--since", "soon"], 2, "--since: 'soon' is not a time"),
    (["--recalibrate", "platt", "--log", "OTHER"], 3, "holds scores of router(s) someone-else"),
    (["--recalibrate", "platt", "--log", "MISSING"], 3, "not found"),
    # was "the validation corpus has no parsed answers", and "router(s) None"
    (["--target-trigger-rate", "0.2", "--log", "LOG", "--since", "2999-01-01"], 3,
     "no scored decisions in LOG since --since (0 decisions, none with a p)"),
    (["--target-trigger-rate", "0.2", "--log", "NAMELESS"], 3, "router(s) (no router name)"),
    (["--recalibrate", "platt", "--log", "NAMELESS"], 3, "router(s) (no router name)"),
])
def test_hostile_log_flags(router_dir, tmp_path, capsys, flags, status, message):
    write_log(tmp_path / "log.db", Router.load(router_dir).name, count=20, labelled=10)
    write_log(tmp_path / "other.db", "someone-else", count=20, labelled=10)
    write_log(tmp_path / "nameless.db", None, count=20, labelled=10)
    paths = {"LOG": str(tmp_path / "log.db"), "OTHER": str(tmp_path / "other.db"),
             "MISSING": str(tmp_path / "missing.db"), "NAMELESS": str(tmp_path / "nameless.db")}
    argv = [paths.get(flag, flag) for flag in flags]
    message = message.replace("LOG", paths["LOG"])
    assert main(["calibrate", "--router", str(router_dir), *argv, "--out", str(tmp_path / "v")]) == status
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "v").exists()
