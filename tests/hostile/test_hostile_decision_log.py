"""Hostile decision-log files (issue 32): each reader command (`imad report`, `imad log export`,
`imad log label`) answers a file that is not a log it can read with one `error:` line naming the
file, exit 3 and no traceback, and leaves the file as it was; the writer refuses the same files
when it opens (a wrong path, before serving), with the same typed errors."""

from __future__ import annotations

import json
import sqlite3

import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from imad.decision_log.schema import SCHEMA_VERSION
from imad.errors import DecisionLogError, DecisionLogFormatError, DecisionLogVersionError
from tests.decision_log.rows import decision_row


def sql(path, statement, params=()):
    """Run one statement and close the connection (closing folds the WAL into the file)."""
    connection = sqlite3.connect(path)
    try:
        connection.execute(statement, params)
        connection.commit()
    finally:
        connection.close()


def valid_log(path):
    with DecisionLog(path) as log:
        log.record(decision_row(0))
    return path


def damaged(path):
    valid_log(path)
    sql(path, "PRAGMA wal_checkpoint(TRUNCATE)")  # fold the WAL into the file first
    data = bytearray(path.read_bytes())
    data[100:] = b"\xa5" * (len(data) - 100)  # keep SQLite's header, wreck every page
    path.write_bytes(bytes(data))
    return path


def foreign(path):
    sql(path, "CREATE TABLE customers (name TEXT)")
    return path


def other_format(path):
    valid_log(path)
    sql(path, "UPDATE meta SET value = 'someone-else' WHERE key = 'format'")
    return path


def newer(path):
    valid_log(path)
    sql(path, "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    return path


def bad_version(path):
    valid_log(path)
    sql(path, "UPDATE meta SET value = 'one' WHERE key = 'schema_version'")
    return path


def version_as(value):
    def make(path):
        valid_log(path)
        if value is None:
            sql(path, "DELETE FROM meta WHERE key = 'schema_version'")
        else:
            sql(path, "UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))
        return path
    return make


def rebuilt(*statements):
    """A valid log whose tables were then changed by `statements` (another program, a hand edit)."""
    def make(path):
        valid_log(path)
        connection = sqlite3.connect(path)
        try:
            connection.executescript(";".join(statements))
        finally:
            connection.close()
        return path
    return make


def without_unique(path):
    """decisions recreated by `CREATE TABLE … AS SELECT`: same columns, no constraints."""
    return rebuilt("CREATE TABLE copy AS SELECT * FROM decisions", "DROP TABLE decisions",
                   "ALTER TABLE copy RENAME TO decisions")(path)


def unique_dropped(path):
    """decisions recreated with every column typed as imad's, the UNIQUE(response_id) left out."""
    valid_log(path)
    connection = sqlite3.connect(path)
    try:
        (create,) = connection.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'decisions'").fetchone()
        connection.executescript(
            "ALTER TABLE decisions RENAME TO old; "
            + create.replace("NOT NULL UNIQUE", "NOT NULL") + "; "
            + "INSERT INTO decisions SELECT * FROM old; DROP TABLE old; "
            "CREATE INDEX decisions_time ON decisions(time); "
            "CREATE TRIGGER decisions_drop_label AFTER DELETE ON decisions "
            "BEGIN DELETE FROM labels WHERE id = old.response_id; END")
    finally:
        connection.close()
    return path


def text_file(path):
    path.write_text('{"id": "not a database"}\n')
    return path


def empty(path):
    path.write_bytes(b"")
    return path


def folder(path):
    path.mkdir()
    return path


def missing(path):
    return path


FILES = [
    ("damaged", damaged, DecisionLogFormatError, "is damaged"),
    ("foreign SQLite file", foreign, DecisionLogFormatError, "not an imad decision log"),
    ("another format in meta", other_format, DecisionLogFormatError, "names format 'someone-else'"),
    ("newer schema", newer, DecisionLogVersionError,
     f"schema version {SCHEMA_VERSION + 1}, newer than the version {SCHEMA_VERSION}"),
    ("schema version not a number", bad_version, DecisionLogFormatError, "is not an integer"),
    ("schema version 0", version_as("0"), DecisionLogFormatError,
     "schema_version '0' is not a version imad writes (1 to"),
    ("schema version -1", version_as("-1"), DecisionLogFormatError,
     "schema_version '-1' is not a version imad writes"),
    ("schema version ' 1'", version_as(" 1"), DecisionLogFormatError,
     "schema_version ' 1' is not an integer"),
    ("schema version missing", version_as(None), DecisionLogFormatError,
     "its meta table has no schema_version"),
    ("decisions is a view", rebuilt("ALTER TABLE decisions RENAME TO rows",
                                    "CREATE VIEW decisions AS SELECT * FROM rows"),
     DecisionLogFormatError, "(decisions is a view, not a table)"),
    ("decisions without UNIQUE(response_id)", unique_dropped, DecisionLogFormatError,
     "is damaged: its tables are not the ones imad writes (decisions lacks UNIQUE(response_id))"),
    ("decisions copied without constraints", without_unique, DecisionLogFormatError,
     "decisions lacks UNIQUE(response_id)"),
    ("decisions without its time index", rebuilt("DROP INDEX decisions_time"), DecisionLogFormatError,
     "(decisions lacks its index on (time))"),
    ("labels dropped", rebuilt("DROP TABLE labels"), DecisionLogFormatError, "(it has no labels table)"),
    ("decisions dropped", rebuilt("DROP TABLE decisions"), DecisionLogFormatError,
     "(it has no decisions table)"),
    ("p declared TEXT", rebuilt("ALTER TABLE decisions DROP COLUMN p",
                                "ALTER TABLE decisions ADD COLUMN p TEXT"),
     DecisionLogFormatError, "(decisions.p holds TEXT, not REAL)"),
    ("its label trigger dropped", rebuilt("DROP TRIGGER decisions_drop_label"),
     DecisionLogFormatError, "(decisions lacks the trigger decisions_drop_label)"),
    ("a text file", text_file, DecisionLogFormatError, "is not a SQLite database"),
    ("an empty file", empty, DecisionLogFormatError, "is empty"),
    ("a folder", folder, DecisionLogError, "is a directory"),
    ("a missing file", missing, DecisionLogError, "not found"),
]
@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    from tests.router.router_helpers import make_router

    return str(make_router().save(tmp_path_factory.mktemp("router") / "router"))


COMMANDS = {
    "report": lambda log, tmp: ["report", "--log", str(log), "--json"],
    "calibrate": lambda log, tmp: ["calibrate", "--router", str(tmp / "router"), "--log", str(log),
                                   "--target-trigger-rate", "0.2", "--out", str(tmp / "router.1")],
    "export": lambda log, tmp: ["log", "export", "--log", str(log), "--format", "jsonl",
                                "--out", str(tmp / "out.jsonl")],
    "label": lambda log, tmp: ["log", "label", "--log", str(log), str(tmp / "labels.jsonl")],
}


def snapshot(path):
    return path.read_bytes() if path.is_file() else None


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(("name", "make", "error", "message"), FILES, ids=[row[0] for row in FILES])
def test_readers_refuse_with_one_error_line(command, name, make, error, message, tmp_path, capsys,
                                           router_dir):
    log = make(tmp_path / "log.db")
    (tmp_path / "labels.jsonl").write_text('{"id": "chatcmpl-000000", "correct": true}\n')
    (tmp_path / "router").symlink_to(router_dir)
    before = snapshot(log)
    assert main(COMMANDS[command](log, tmp_path)) == 3
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    prog = "imad log" if command in ("export", "label") else f"imad {command}"
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error:")
    assert message in lines[0] and str(log) in lines[0]
    assert "Traceback" not in captured.err and captured.out == ""
    assert snapshot(log) == before
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "router.1").exists()


WRITER_REFUSES = [row for row in FILES if row[0] not in ("a missing file", "an empty file")]


@pytest.mark.parametrize(("name", "make", "error", "message"), WRITER_REFUSES,
                         ids=[row[0] for row in WRITER_REFUSES])
def test_the_writer_refuses_a_file_that_is_not_its_log(name, make, error, message, tmp_path):
    log = make(tmp_path / "log.db")
    before = snapshot(log)
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        DecisionLog(log)
    assert snapshot(log) == before


def test_the_writer_starts_a_log_in_an_empty_file(tmp_path):
    path = empty(tmp_path / "log.db")
    with DecisionLog(path) as log:
        log.record(decision_row(0))
    assert log.stats["written"] == 1


def test_a_locked_log_is_one_error_line_for_label(tmp_path, capsys, monkeypatch):
    import imad.decision_log.location as location

    monkeypatch.setattr(location.open_for_reading, "__kwdefaults__",
                        {**location.open_for_reading.__kwdefaults__, "busy_timeout_s": 0.05})
    log = valid_log(tmp_path / "log.db")
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "chatcmpl-000000", "correct": true}\n')
    holder = sqlite3.connect(log, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert main(["log", "label", "--log", str(log), str(labels)]) == 3
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = capsys.readouterr().err
    assert "is locked by another process" in err and "Traceback" not in err
    assert main(["log", "label", "--log", str(log), str(labels)]) == 0


OPTIONS = [
    ({"max_rows": 0}, "--decision-log-max-rows: must be an integer in [1, 1,000,000,000], got 0"),
    ({"max_rows": -5}, "--decision-log-max-rows: must be an integer in [1,"),
    ({"max_rows": 2.5}, "--decision-log-max-rows: must be an integer in [1,"),
    ({"max_rows": True}, "--decision-log-max-rows: must be an integer in [1,"),
    ({"max_rows": "10"}, "got '10'"),
    ({"max_rows": 10**12}, "--decision-log-max-rows: must be an integer in [1,"),
    ({"queue_size": 0}, "queue_size: must be an integer in [1,"),
    ({"batch_size": 0}, "batch_size: must be an integer in [1,"),
    ({"synchronous": "OFF"}, "synchronous: must be one of NORMAL, FULL, got 'OFF'"),
    ({"busy_timeout_s": -1}, "busy_timeout_s: must be a number of seconds in [0, 3600], got -1"),
    ({"busy_timeout_s": float("nan")}, "busy_timeout_s: must be a number of seconds in [0, 3600]"),
]


@pytest.mark.parametrize(("options", "message"), OPTIONS, ids=[str(row[0]) for row in OPTIONS])
def test_bad_writer_options_name_the_option(options, message, tmp_path):
    from imad.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        DecisionLog(tmp_path / "log.db", **options)
    assert message in str(caught.value)
    assert not (tmp_path / "log.db").exists()


@pytest.mark.parametrize("row", [None, ["id", "x"], "chatcmpl-1", 7])
def test_a_row_that_is_not_a_mapping_is_a_counted_drop(row, tmp_path):
    with DecisionLog(tmp_path / "log.db") as log:
        assert log.record(row) is False
    assert log.stats.group("dropped") == {"bad_row": 1}


BAD_VALUES = [  # a value the log cannot hold: that row is dropped and counted, no other
    ("critique_prompt_tokens", 10**30),   # SQLite's OverflowError killed the writer thread
    ("served_model", "gpt-\ud800"),       # UnicodeEncodeError, the same
    ("response_id", "chatcmpl-\udfff"),
    ("time", float("nan")),               # stored NULL: `imad report` crashed (TypeError)
    ("time", None),
    ("time", 1e20),                       # OverflowError in the report
    ("time", "x"),                        # ArrowInvalid in the Parquet export
    ("time", -1.0),
    ("escalated", "no"),                  # bool("no") is True: stored as escalated
    ("ood", 2),
]


@pytest.mark.parametrize(("column", "value"), BAD_VALUES, ids=[f"{c}={v!r}"[:40] for c, v in BAD_VALUES])
def test_a_value_the_log_cannot_hold_drops_that_row_only(column, value, tmp_path, capsys):
    path = tmp_path / "log.db"
    with DecisionLog(path) as log:
        for index in range(3):
            log.record(decision_row(index))
        log.record({**decision_row(9), column: value})
        log.flush()
        log.record(decision_row(4))  # the writer thread is still alive
    assert log.stats["written"] == 4 and log.stats.group("dropped") == {"bad_row": 1}
    for argv in (["report", "--log", str(path), "--json"],
                 ["log", "export", "--log", str(path), "--format", "jsonl"]):
        assert main(argv) == 0
    assert capsys.readouterr().out.count('"response_id"') == 4


def test_a_non_finite_real_is_stored_as_null_and_exports(tmp_path, capsys):
    """p = inf was stored as inf, and `imad log export` failed on it with a traceback."""
    path = tmp_path / "log.db"
    with DecisionLog(path) as log:
        log.record({**decision_row(0), "p": float("inf"), "confidence_initial": float("-inf")})
    assert main(["log", "export", "--log", str(path), "--format", "jsonl"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["p"] is None and row["confidence_initial"] is None and row["raw"] == decision_row(0)["raw"]


@pytest.mark.parametrize(("column", "value"), [("features", "[" * 5000), ("reasons", "{not json"),
                                               ("features", '{"a": NaN}'), ("reasons", "9" * 500)])
def test_a_json_column_imad_did_not_write_is_one_error_line(column, value, tmp_path, capsys):
    log = valid_log(tmp_path / "log.db")
    sql(log, f"UPDATE decisions SET {column} = ?", (value,))
    assert main(["log", "export", "--log", str(log), "--format", "jsonl"]) == 3
    err = capsys.readouterr().err
    assert "a row holds a value imad did not write" in err and "Traceback" not in err


EDITED = [  # a value imad never writes, put there by hand or by another program
    ("time", None, "time holds None"),          # TypeError in the report, "a bug in imad"
    ("time", "x", "time holds the text 'x'"),   # ArrowInvalid in the Parquet export
    ("time", 1e20, "time holds 1e+20"),         # OverflowError in the report
    ("p", "abc", "p holds the text 'abc'"),     # ValueError in the report and calibrate
    ("raw", "abc", "raw holds the text 'abc'"),
    ("escalated", 5, "escalated holds 5, not 0 or 1"),    # was read as true
    ("ood", "maybe", "ood holds 'maybe', not 0 or 1"),
]


READERS = {"report": ["report", "--json"], "jsonl": ["log", "export", "--format", "jsonl"],
           "parquet": ["log", "export", "--format", "parquet", "--out", "x.parquet"]}


READ_EDITS = [(reader, *edit) for reader in READERS for edit in EDITED
              if not (reader == "report" and edit[0] == "raw")]  # the report card does not read raw


@pytest.mark.parametrize(("reader", "column", "value", "message"), READ_EDITS,
                         ids=[f"{reader}-{c}={v!r}" for reader, c, v, _ in READ_EDITS])
def test_a_plain_column_imad_did_not_write_is_one_error_line(reader, column, value, message,
                                                             tmp_path, capsys, monkeypatch):
    if reader == "parquet":
        pytest.importorskip("pyarrow")
    monkeypatch.chdir(tmp_path)
    log = valid_log(tmp_path / "log.db")
    sql(log, f"UPDATE decisions SET {column} = ?", (value,))
    assert main([*READERS[reader], "--log", str(log)]) == 3
    err = capsys.readouterr().err
    assert "a row holds a value imad did not write" in err and message in err
    assert "bug in imad" not in err and not (tmp_path / "x.parquet").exists()


@pytest.mark.parametrize("value", [5, "x", -1], ids=["5", "text", "-1"])
def test_a_label_imad_did_not_write_is_one_error_line(value, tmp_path, capsys):
    """A hand-edited label of 5 or 'x' was read as "right"."""
    log = valid_log(tmp_path / "log.db")
    sql(log, "INSERT INTO labels (id, correct, source, time, changes) "
             "SELECT response_id, ?, 'gold', 0, 0 FROM decisions", (value,))
    assert main(["report", "--log", str(log), "--json"]) == 3
    err = capsys.readouterr().err
    assert "a row holds a value imad did not write (correct holds" in err and "bug in imad" not in err



@pytest.mark.parametrize("value", ["yesterday", None, 1e20])
def test_calibrate_refuses_the_rows_report_refuses(value, tmp_path, capsys, router_dir):
    """`calibrate --target-trigger-rate --log` read only p and the router name, so a row whose
    time imad never wrote was used there while `imad report` refused the file."""
    log = valid_log(tmp_path / "log.db")
    sql(log, "UPDATE decisions SET time = ?", (value,))
    for argv in (["report", "--log", str(log)],
                 ["calibrate", "--router", router_dir, "--log", str(log), "--target-trigger-rate",
                  "0.2", "--out", str(tmp_path / "router.1")]):
        assert main(argv) == 3
        err = capsys.readouterr().err
        assert "a row holds a value imad did not write (time holds" in err, err
    assert not (tmp_path / "router.1").exists()
