"""Every reader takes the postgresql:// URL the servers write to: `imad report` (AUROC equal to
scikit-learn's over the fleet's rows, `--replica`), `imad log export`, `imad log label` and
`imad calibrate --log`; none of them prints the password."""

from __future__ import annotations

import json
import random

import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from imad.router import Router
from tests.decision_log.rows import labelled_rows
from tests.router.router_helpers import make_router
from tests.support.postgres import ROLE_PASSWORD

sklearn_metrics = pytest.importorskip("sklearn.metrics")
SECRETS = (ROLE_PASSWORD, "p%40ss")


@pytest.fixture
def fleet_log(postgres_url):
    """80 shadow decisions written by two replicas (web-1 the even ones, web-2 the odd ones)."""
    pairs = labelled_rows(80, seed=11, shadow=True)
    with DecisionLog(postgres_url) as one, DecisionLog(postgres_url) as two:
        for index, (row, _) in enumerate(pairs):
            replica = (one, "web-1", 101) if index % 2 == 0 else (two, "web-2", 202)
            replica[0].record({**row, "host": replica[1], "process": replica[2]})
    return postgres_url, pairs


def _label_file(tmp_path, pairs) -> str:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps({"id": row["response_id"], "correct": correct}) + "\n"
                            for row, correct in pairs))
    return str(path)


def test_report_counts_the_fleet_and_its_auroc_is_sklearns(fleet_log, tmp_path, capsys):
    url, pairs = fleet_log
    assert main(["log", "label", "--log", url, _label_file(tmp_path, pairs[:60]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"added": 60, "replaced": 0}
    assert main(["report", "--log", url, "--json"]) == 0
    output = capsys.readouterr().out
    card = json.loads(output)
    assert (card["rows"], card["labelled"]) == (80, 60)
    y, p = [c for _, c in pairs[:60]], [row["p"] for row, _ in pairs[:60]]
    assert card["auroc"] == pytest.approx(sklearn_metrics.roc_auc_score(y, p), abs=1e-6)
    assert not any(secret in output for secret in SECRETS) and "***" in card["log"]


def test_report_of_one_replica_sees_its_rows_only(fleet_log, capsys):
    url, pairs = fleet_log
    assert main(["report", "--log", url, "--replica", "web-2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 40
    assert main(["report", "--log", url, "--replica", "web-1:101", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 40
    assert main(["report", "--log", url, "--replica", "web-9"]) == 2
    error = capsys.readouterr().err
    assert "--replica: no decision in" in error and "'web-1', 'web-2'" in error
    assert not any(secret in error for secret in SECRETS)


def test_export_writes_every_replicas_rows(fleet_log, capsys):
    url, pairs = fleet_log
    assert main(["log", "export", "--log", url, "--format", "jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [record["response_id"] for record in records] == [row["response_id"] for row, _ in pairs]
    assert {record["host"] for record in records} == {"web-1", "web-2"}


def test_calibrate_fits_on_the_fleets_log_and_names_it_redacted(postgres_url, tmp_path, capsys):
    router_dir = make_router().save(tmp_path / "router")
    name = Router.load(router_dir).name
    rng = random.Random(3)
    rows = []
    for index in range(120):
        raw = rng.random()
        rows.append(({**labelled_rows(1, seed=index)[0][0], "response_id": f"c-{index}",
                      "router_name": name, "raw": raw, "p": raw, "served": "single_agent",
                      "host": "web-1" if index < 100 else "web-2", "process": 7},
                     rng.random() < 0.2 + 0.6 * raw))
    with DecisionLog(postgres_url) as log:
        for row, _ in rows:
            log.record(row)
    assert main(["log", "label", "--log", postgres_url, _label_file(tmp_path, rows[:90])]) == 0
    assert main(["calibrate", "--router", str(router_dir), "--recalibrate", "platt", "--log",
                 postgres_url, "--replica", "web-1", "--out", str(tmp_path / "v"), "--json"]) == 0
    output = capsys.readouterr().out
    record = json.loads(output[output.index("{"):])
    assert (record["method"], record["answers"], record["labelled"]) == ("platt", 100, 90)
    assert "postgresql://imad:***@127.0.0.1" in record["files"][0]
    assert not any(secret in output for secret in SECRETS)
    assert Router.load(tmp_path / "v").calibrator.kind == "platt"
