"""What the report card shows a reader: no undefined point drawn as a result, intervals named
only where there are some, small deciles and the inferred "broke" said in words, and a log of
several routers split by router (never pooled into one gate or read as drift)."""

from __future__ import annotations

import json

import pytest

from imad.cli.main import main
from imad.report import report_card
from imad.report.markdown import render_markdown
from tests.decision_log.rows import T0, labelled_rows
from tests.report.test_report_cli import make_log, shadow_log  # noqa: F401 (a fixture)

pytest.importorskip("sklearn.metrics")


def test_the_deferral_curve_has_no_point_where_nothing_is_kept(shadow_log):  # noqa: F811
    curves = report_card(shadow_log[0], samples=50)["quality"]["deferral"]
    assert curves["escalation_rate"][-1] == 1.0
    for gate in ("router", "random", "oracle", "confidence"):
        assert curves[gate][-1] is None and None not in curves[gate][:-1]


def test_intervals_are_named_only_under_numbers_that_have_them(shadow_log, tmp_path):  # noqa: F811
    card = report_card(shadow_log[0], samples=50)
    assert "Numbers in brackets are 95% percentile bootstrap intervals" in render_markdown(card, {})
    few = tmp_path / "few.db"
    pairs = labelled_rows(8, seed=1)
    make_log(few, [row for row, _ in pairs], [(row["response_id"], c, None) for row, c in pairs])
    text = render_markdown(report_card(few, samples=50), {})
    assert "bootstrap" not in text and "Intervals are" not in text


def test_small_deciles_are_marked_and_broke_is_said_to_be_inferred(shadow_log):  # noqa: F811
    text = render_markdown(report_card(shadow_log[0], samples=50), {})
    assert "| 1 | " in text and "(few rows)" not in text  # 12 rows a decile
    assert "*broke*: the single answer was labelled right and the debate changed it — inferred" in text
    small = shadow_log[0].parent / "small.db"
    pairs = labelled_rows(40, seed=3, shadow=True)
    make_log(small, [row for row, _ in pairs], [(row["response_id"], c, None) for row, c in pairs])
    card = report_card(small, samples=50)
    assert all(entry["small"] for entry in card["shadow"]["by_decile"])
    assert "| 1 (few rows) |" in render_markdown(card, {})


def two_routers_log(tmp_path):
    """A day of one router, then a reload: a day of another (another hash)."""
    pairs = labelled_rows(200, seed=5, shadow=True)
    rows = []
    for index, (row, _) in enumerate(pairs):
        second = index >= 100
        rows.append({**row, "time": T0 + index * 900.0,
                     "router_name": "imad-router-v2-local.1" if second else "imad-router-v2",
                     "router_hash": ("cd" if second else "ab") * 32})
    path = tmp_path / "two.db"
    make_log(path, rows, [(row["response_id"], c, None) for row, (_, c) in zip(rows, pairs, strict=True)])
    return path


def test_a_log_of_two_routers_is_split_and_filtered_by_router(tmp_path, capsys):
    path = two_routers_log(tmp_path)
    card = report_card(path, samples=50)
    assert set(card["volume"]["by_router"]) == {"imad-router-v2 (abababababab)",
                                                "imad-router-v2-local.1 (cdcdcdcdcdcd)"}
    assert card["volume"]["by_router"]["imad-router-v2 (abababababab)"]["rows"] == 100
    assert card["routers_note"].startswith("2 routers scored these decisions")
    other = [window for window in card["windows"] if "not the reference window's router" in
             (window["psi_note"] or "")]
    assert other and all(window["psi"] is None for window in other)
    assert "**Several routers.**" in render_markdown(card, {})
    assert main(["report", "--log", str(path), "--router", "cdcdcdcd", "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["rows"] == 100 and one["routers_note"] is None
    assert main(["report", "--log", str(path), "--router", "imad-router-v2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 100
    assert main(["report", "--log", str(path), "--router", "imad-router-v9"]) == 2
    err = capsys.readouterr().err
    assert "--router: no decision in the selection was scored by 'imad-router-v9'" in err
    assert "imad-router-v2-local.1 (cdcdcdcdcdcd)" in err
