"""Hostile logs for `imad report`: values imad never writes, put into a log by hand or by another
program. `imad report --json` never prints Infinity or NaN; a row whose p is not a probability
is left out and counted, in the JSON and in words in the text card (p = 1e308 in 5 rows made
ECE and Brier Infinity and a bin NaN; p = 2.0 or -1 was used, a bin's mean p 1.0096)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from tests.decision_log.rows import labelled_rows

ROWS = 60


def refuse_constant(name: str):
    raise AssertionError(f"the card holds {name}, which is not JSON")


def write_log(path, edits):
    """A log of `ROWS` labelled rows; then `edits` (row index → {column: value}) by hand in SQL."""
    with DecisionLog(path) as log:
        for row, _ in labelled_rows(ROWS):
            log.record(row)
    connection = sqlite3.connect(path)
    try:
        connection.executemany(
            "INSERT INTO labels (id, correct, source, time, changes) VALUES (?, ?, 'gold', 0, 0)",
            [(row["response_id"], int(correct)) for row, correct in labelled_rows(ROWS)])
        for index, values in edits.items():
            for column, value in values.items():
                connection.execute(f"UPDATE decisions SET {column} = {value} WHERE response_id = ?",
                                   (f"chatcmpl-{index:06d}",))
        connection.commit()
    finally:
        connection.close()
    return path


LOGS = [  # (name, edits, rows left out)
    ("p 1e308 in 5 rows", {i: {"p": "1e308"} for i in range(5)}, 5),
    ("p +inf", {3: {"p": "9e999"}}, 1),
    ("p -inf", {3: {"p": "-9e999"}}, 1),
    ("p 2.0", {i: {"p": "2.0"} for i in range(0, 40, 4)}, 10),
    ("p -1", {7: {"p": "-1"}}, 1),
    ("p just above 1", {7: {"p": "1.0000001"}}, 1),
    ("p 1e-320 (subnormal, in range)", {7: {"p": "1e-320"}}, 0),
    ("every p out of range", {i: {"p": "5"} for i in range(ROWS)}, ROWS),
    ("confidence 1e308", {i: {"confidence_initial": "1e308"} for i in range(10)}, 0),
    ("confidence -inf", {i: {"confidence_initial": "-9e999"} for i in range(10)}, 0),
    ("p NULL", {i: {"p": "NULL"} for i in range(10)}, 0),
    ("p and confidence inf", {i: {"p": "9e999", "confidence_initial": "9e999"} for i in range(30)}, 30),
]


@pytest.mark.parametrize(("name", "edits", "left_out"), LOGS, ids=[row[0] for row in LOGS])
def test_the_card_is_finite_json_and_counts_what_it_left_out(name, edits, left_out, tmp_path, capsys):
    log = write_log(tmp_path / "log.db", edits)
    assert main(["report", "--log", str(log), "--json"]) == 0
    out = capsys.readouterr().out
    assert "Infinity" not in out and "NaN" not in out
    card = json.loads(out, parse_constant=refuse_constant)
    assert card["excluded"] == {"p_out_of_range": left_out}
    assert card["rows"] == ROWS - left_out
    assert all(0.0 <= p <= 1.0 for p in card["quality"]["router"].get("reliability", {}).get("mean_p", []))
    assert main(["report", "--log", str(log)]) == 0
    text = capsys.readouterr().out
    said = f"{left_out} decision{'s' if left_out > 1 else ''} left out: p outside [0, 1]"
    assert (said in text) == bool(left_out)
    assert "inf" not in text.lower().replace("info", "") and "nan" not in text.lower()


def test_five_huge_p_leave_finite_metrics(tmp_path, capsys):
    """The reported reproduction: the metrics are those of the other 55 rows."""
    edited = write_log(tmp_path / "edited.db", {i: {"p": "1e308"} for i in range(5)})
    clean = write_log(tmp_path / "clean.db", {})
    sqlite3.connect(clean).execute("DELETE FROM decisions WHERE seq <= 5").connection.commit()
    cards = []
    for log in (edited, clean):
        assert main(["report", "--log", str(log), "--json"]) == 0
        cards.append(json.loads(capsys.readouterr().out))
    edited_card, clean_card = cards
    assert edited_card["quality"]["router"]["ece"] == clean_card["quality"]["router"]["ece"]
    assert edited_card["quality"]["router"]["brier"] == clean_card["quality"]["router"]["brier"]
    assert edited_card["rows"] == clean_card["rows"] == ROWS - 5
