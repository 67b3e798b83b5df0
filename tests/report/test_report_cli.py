"""`imad report` end to end on a real decision log: the card's counts, AUROC equal to
scikit-learn's over the same rows, plain words when labels are too few, the PNGs and markdown."""

from __future__ import annotations

import json

import numpy as np
import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from imad.decision_log.labels import Label, set_label
from imad.decision_log.location import open_for_reading
from imad.report import report_card
from tests.decision_log.rows import T0, decision_row, labelled_rows

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def make_log(path, rows, labelled=None, *, log_text=False):
    with DecisionLog(path, log_text=log_text) as log:
        for row in rows:
            log.record(row)
    store = open_for_reading(path, writable=True)
    for decision_id, correct, debate_correct in (labelled or []):
        set_label(store, Label(decision_id, correct, "gold", debate_correct))
    store.close()


@pytest.fixture
def shadow_log(tmp_path):
    """120 shadow decisions, 90 labelled (the issue's end-to-end goal, without the server)."""
    pairs = labelled_rows(120, seed=7, shadow=True)
    path = tmp_path / "log.db"
    make_log(path, [row for row, _ in pairs],
             [(row["response_id"], correct, None) for row, correct in pairs[:90]])
    return path, pairs


def test_json_card_counts_and_auroc_equal_sklearn(shadow_log, capsys):
    path, pairs = shadow_log
    assert main(["report", "--log", str(path), "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert (card["rows"], card["labelled"]) == (120, 90)
    y = [correct for _, correct in pairs[:90]]
    p = [row["p"] for row, _ in pairs[:90]]
    assert card["auroc"] == pytest.approx(sklearn_metrics.roc_auc_score(y, p), abs=1e-6)
    assert card["auroc_note"] is None
    would = sum(row["would_escalate"] for row, _ in pairs) / 120
    assert card["volume"]["would_escalate_rate"] == pytest.approx(would)
    assert card["volume"]["escalation_rate"] == 0.0  # shadow: nothing escalated
    assert card["quality"]["router"]["brier"] == pytest.approx(
        sklearn_metrics.brier_score_loss(y, p), abs=1e-9)
    kept = [c for (row, c) in pairs[:90] if not row["would_escalate"]]
    assert card["quality"]["kept_accuracy"]["value"] == pytest.approx(np.mean(kept))
    assert card["shadow"]["rows"] == 120


def test_too_few_labels_are_said_in_words_never_nan(tmp_path, capsys):
    pairs = labelled_rows(40, seed=1)
    path = tmp_path / "log.db"
    make_log(path, [row for row, _ in pairs], [(pairs[i][0]["response_id"], i < 3, None) for i in range(8)])
    assert main(["report", "--log", str(path), "--json"]) == 0
    text = capsys.readouterr().out
    card = json.loads(text)
    assert card["auroc"] is None
    assert "at least 10 correct and 10 wrong" in card["auroc_note"]
    assert "NaN" not in text and "Infinity" not in text
    router = card["quality"]["router"]
    assert router["ece"] is None and "too few labels" in router["ece_note"]


def test_out_writes_markdown_and_pictures(shadow_log, tmp_path, capsys):
    path, _ = shadow_log
    out = tmp_path / "card"
    assert main(["report", "--log", str(path), "--out", str(out)]) == 0
    markdown = (out / "report.md").read_text()
    assert "120 decisions" in markdown and "90 labelled" in markdown
    assert "![Reliability diagram](reliability.png)" in markdown
    for name in ("reliability.png", "deferral.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "nan" not in markdown.lower()


def test_model_and_since_select_rows_and_windows_are_counted(tmp_path):
    rows = [decision_row(i, model="a" if i % 2 else "b", time=T0 + i * 3600.0) for i in range(48)]
    path = tmp_path / "log.db"
    make_log(path, rows)
    card = report_card(path, model="a", since=T0 + 24 * 3600.0, window_s=6 * 3600.0)
    assert card["rows"] == 12
    assert list(card["volume"]["by_model"]) == ["a"]
    assert sum(window["rows"] for window in card["windows"]) == 12


def test_drift_flags_a_shifted_window(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for day in range(3):
        for i in range(100):
            p = float(rng.beta(5, 2) if day < 2 else rng.beta(2, 5))
            rows.append({**decision_row(day * 100 + i, time=T0 + day * 86_400 + i), "p": p})
    path = tmp_path / "log.db"
    make_log(path, rows)
    card = report_card(path)
    psis = [window["psi"] for window in card["windows"]]
    assert psis[0] is None and card["windows"][0]["psi_note"] == "the reference window"
    assert psis[1] < 0.2 < psis[2]
    assert card["drift"]["flagged_windows"] == [card["windows"][2]["start"]]
    assert "first window" in card["drift"]["reference"]


def test_shadow_debates_by_decile_fixed_and_broke(tmp_path):
    rows, labels = [], []
    for i in range(40):
        row = {**decision_row(i, shadow=True), "p": i / 40, "single_answer": "A",
               "debate_answer": "B" if i % 4 == 0 else "a "}
        rows.append(row)
        if i < 20:  # labelled: the single answer wrong where i is a multiple of 8
            labels.append((row["response_id"], i % 8 != 0, True))
    path = tmp_path / "log.db"
    make_log(path, rows, labels, log_text=True)
    shadow = report_card(path)["shadow"]
    assert (shadow["rows"], shadow["changed"]) == (40, 10)
    assert sum(entry["rows"] for entry in shadow["by_decile"]) == 40
    # changed and labelled: i = 0, 4, 8, 12, 16; wrong (fixed by a right debate) at 0, 8, 16,
    # right (broken by the change) at 4 and 12
    assert (shadow["fixed"], shadow["broke"]) == (3, 2)


def test_an_empty_log_is_a_card_of_plain_words(tmp_path, capsys):
    path = tmp_path / "log.db"
    DecisionLog(path).close()
    assert main(["report", "--log", str(path), "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert (card["rows"], card["labelled"], card["auroc"]) == (0, 0, None)
    assert card["volume"]["escalation_rate"] is None and card["windows"] == []
    assert "the log has 0 correct and 0 wrong" in card["auroc_note"]
    assert main(["report", "--log", str(path)]) == 0
    markdown = capsys.readouterr().out
    assert "0 decisions; 0 labelled." in markdown and "nan" not in markdown.lower()
