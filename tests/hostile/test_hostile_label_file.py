"""Hostile bulk label files for `imad log label --log PATH FILE.jsonl` (issue 32 item 3).

Every bad file is refused whole: exit 3, an `error:` report naming each bad line (or the file),
no traceback, and not one label written."""

from __future__ import annotations

import os

import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from imad.decision_log.location import open_for_reading
from tests.decision_log.rows import decision_row

GOOD = '{"id": "chatcmpl-000000", "correct": true}'

TABLE = [
    ("not JSON", f'{GOOD}\n{{"id": "chatcmpl-000001", "correct": tru}}\n', ["line 2: not valid JSON"]),
    ("a JSON array", '[1, 2]\n', ["line 1: a JSON array where a JSON object"]),
    ("missing id", '{"correct": true}\n', ["line 1: id must be a non-empty string", "missing"]),
    ("empty id", '{"id": " ", "correct": true}\n', ["line 1: id must be a non-empty string"]),
    ("numeric id", '{"id": 7, "correct": true}\n', ["id must be a non-empty string", "the number 7"]),
    ("correct as 1", '{"id": "chatcmpl-000000", "correct": 1}\n',
     ["correct must be true or false, not the number 1"]),
    ("correct as a string", '{"id": "chatcmpl-000000", "correct": "true"}\n',
     ["correct must be true or false, not the string 'true'"]),
    ("correct null", '{"id": "chatcmpl-000000", "correct": null}\n',
     ["correct must be true or false, not null"]),
    ("correct missing", '{"id": "chatcmpl-000000"}\n', ["correct must be true or false, not missing"]),
    ("unknown source", '{"id": "chatcmpl-000000", "correct": true, "source": "boss"}\n',
     ["source must be one of user, judge, gold, not the string 'boss'"]),
    ("a misspelt key", '{"id": "chatcmpl-000000", "corect": true}\n', ["unknown key(s) 'corect'"]),
    ("debate_correct not a boolean", '{"id": "chatcmpl-000000", "correct": true, '
     '"debate_correct": "no"}\n', ["debate_correct must be true, false or absent"]),
    ("format and unknown id at once", f'{{"id": "chatcmpl-404", "correct": true}}\n{GOOD}\n'
     '{"id": "chatcmpl-000001", "correct": 1}\n', ["2 bad line(s)", "line 1: no decision with id "
                                                    "'chatcmpl-404'", "line 3: correct must be"]),
    ("unknown id", f'{GOOD}\n{{"id": "chatcmpl-404", "correct": false}}\n',
     ["line 2: no decision with id 'chatcmpl-404' in the log"]),
    ("duplicate ids", f'{GOOD}\n{GOOD}\n',
     ["line 2: id 'chatcmpl-000000' is labelled again (first on line 1)"]),
    ("an id too long", '{"id": "' + "x" * 300 + '", "correct": true}\n', ["over the limit of 256"]),
    ("no labels", "\n\n", ["the file holds no labels"]),
    # were "unexpected UnicodeEncodeError … this is a bug in imad", and a silent last-one-wins
    ("a lone surrogate in the id", '{"id": "chatcmpl-\\ud800", "correct": true}\n',
     ["line 1: id holds a lone surrogate U+D800 at character 10"]),
    ("correct given twice", '{"id": "chatcmpl-000000", "correct": true, "correct": false}\n',
     ["line 1: not valid JSON (an object names the key 'correct' twice)"]),
    ("id given twice", '{"id": "chatcmpl-000000", "id": "chatcmpl-000001", "correct": true}\n',
     ["line 1: not valid JSON (an object names the key 'id' twice)"]),
    ("many bad lines", "".join(f'{{"id": "chatcmpl-000000", "correct": {i}}}\n' for i in range(30)),
     ["30 bad line(s)", "line 20:", "… and 10 more"]),
]


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "log.db"
    with DecisionLog(path) as writer:
        for index in range(3):
            writer.record(decision_row(index))
    return path


def labels_written(log) -> int:
    store = open_for_reading(log)
    try:
        return store.connection.execute("SELECT count(*) FROM labels").fetchone()[0]
    finally:
        store.close()


def refused(log, labels, capsys) -> str:
    assert main(["log", "label", "--log", str(log), str(labels)]) == 3
    captured = capsys.readouterr()
    assert captured.err.startswith("imad log: error: ") and "Traceback" not in captured.err
    assert captured.out == ""
    assert labels_written(log) == 0
    return captured.err


@pytest.mark.parametrize(("name", "text", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_a_bad_label_file_is_refused_whole(name, text, expected, log, tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(text)
    err = refused(log, labels, capsys)
    assert str(labels) in err and "no label was written" in err
    for piece in expected:
        assert piece in err


def test_not_utf8(log, tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(b'{"id": "chatcmpl-000000\xff", "correct": true}\n')
    assert "line 1: not UTF-8" in refused(log, labels, capsys)


def test_a_huge_file_is_refused_before_it_is_read(log, tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    with open(labels, "wb") as handle:  # sparse: 300 MiB on paper, nothing on disk
        handle.truncate(300 * 1024 * 1024)
    err = refused(log, labels, capsys)
    assert "over the limit of 268,435,456" in err


@pytest.mark.parametrize("kind", ["missing", "folder", "fifo"])
def test_a_label_path_that_is_not_a_file(kind, log, tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    if kind == "folder":
        labels.mkdir()
    elif kind == "fifo":
        os.mkfifo(labels)
    err = refused(log, labels, capsys)
    assert str(labels) in err


def test_the_byte_order_mark_and_crlf_are_accepted(log, tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(b"\xef\xbb\xbf" + GOOD.encode() + b"\r\n")
    assert main(["log", "label", "--log", str(log), str(labels)]) == 0
    assert labels_written(log) == 1


LABEL_OBJECTS = [  # (fields, the field named): the Python API's Label, as DecisionLog.label takes it
    ({"id": "chatcmpl-000000", "correct": 2}, "correct"),        # was stored as 2
    ({"id": "chatcmpl-000000", "correct": "no"}, "correct"),     # was "invalid literal for int()"
    ({"id": "chatcmpl-000000", "correct": None}, "correct"),
    ({"id": "chatcmpl-000000", "correct": True, "source": "boss"}, "source"),  # was stored
    ({"id": "chatcmpl-000000", "correct": True, "debate_correct": "x"}, "debate_correct"),
    ({"id": 5, "correct": True}, "id"),
    ({"id": " ", "correct": True}, "id"),
    ({"id": "chatcmpl-\ud800", "correct": True}, "id"),
]


@pytest.mark.parametrize(("fields", "name"), LABEL_OBJECTS,
                         ids=[f"{n}={f.get(n)!r}" for f, n in LABEL_OBJECTS])
def test_a_label_object_with_a_bad_field_is_refused_and_writes_nothing(fields, name, log):
    from imad.decision_log.labels import Label
    from imad.errors import ConfigError

    with pytest.raises(ConfigError, match=f"^{name}: "):
        Label(**fields)
    assert labels_written(log) == 0


def test_decision_log_label_refuses_what_is_not_a_label(log):
    from imad.errors import ConfigError

    with DecisionLog(log) as writer, pytest.raises(ConfigError, match="^label: expected"):
        writer.label({"id": "chatcmpl-000000", "correct": True})
    assert labels_written(log) == 0
