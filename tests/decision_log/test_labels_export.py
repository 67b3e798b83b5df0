"""Labels (one and in bulk), the export for a warehouse, and the labelled rows a calibrator fits
on (issue 32 items 2, 3, 5)."""

from __future__ import annotations

import json

import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from imad.decision_log.labelled import labelled_scores
from imad.decision_log.labels import Label, import_label_file, set_label
from imad.decision_log.location import open_for_reading
from imad.errors import DecisionLogError, LabelFileError, UnknownDecisionError
from tests.decision_log.rows import T0, decision_row


@pytest.fixture
def log_path(tmp_path):
    path = tmp_path / "log.db"
    with DecisionLog(path, log_text=True) as log:
        for index in range(6):
            log.record(decision_row(index))
    return path


def label_of(path, decision_id):
    store = open_for_reading(path)
    try:
        return store.connection.execute(
            "SELECT correct, debate_correct, source, changes FROM labels WHERE id = ?",
            (decision_id,)).fetchone()
    finally:
        store.close()


def test_a_repeat_replaces_the_label_and_counts_the_change(log_path):
    store = open_for_reading(log_path, writable=True)
    assert set_label(store, Label("chatcmpl-000001", True, "user")) == 0
    assert set_label(store, Label("chatcmpl-000001", False, "judge", debate_correct=True)) == 1
    store.close()
    assert label_of(log_path, "chatcmpl-000001") == (0, 1, "judge", 1)


def test_an_unknown_id_is_refused(log_path):
    store = open_for_reading(log_path, writable=True)
    with pytest.raises(UnknownDecisionError, match="no decision with id 'chatcmpl-999'"):
        set_label(store, Label("chatcmpl-999", True))
    store.close()


def test_a_label_file_is_applied_whole(log_path, tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "chatcmpl-000000", "correct": true}\n\n'
                      '{"id": "chatcmpl-000002", "correct": false, "source": "judge"}\n')
    assert main(["log", "label", "--log", str(log_path), str(labels), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"added": 2, "replaced": 0}
    assert label_of(log_path, "chatcmpl-000000") == (1, None, "gold", 0)
    assert label_of(log_path, "chatcmpl-000002") == (0, None, "judge", 0)
    assert main(["log", "label", "--log", str(log_path), str(labels)]) == 0
    assert "2 decisions (0 new, 2 replaced)" in capsys.readouterr().out
    assert label_of(log_path, "chatcmpl-000002")[3] == 1


def test_one_bad_line_refuses_the_whole_file(log_path, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "chatcmpl-000000", "correct": true}\n'
                      '{"id": "chatcmpl-000404", "correct": true}\n')
    store = open_for_reading(log_path, writable=True)
    with pytest.raises(LabelFileError) as caught:
        import_label_file(store, labels)
    store.close()
    assert caught.value.problems == [(2, "no decision with id 'chatcmpl-000404' in the log")]
    assert label_of(log_path, "chatcmpl-000000") is None


def test_jsonl_export_round_trips_every_column_and_label(log_path, tmp_path):
    store = open_for_reading(log_path, writable=True)
    set_label(store, Label("chatcmpl-000003", True, "gold"))
    store.close()
    out = tmp_path / "export.jsonl"
    assert main(["log", "export", "--log", str(log_path), "--format", "jsonl", "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [record["response_id"] for record in records] == [f"chatcmpl-{i:06d}" for i in range(6)]
    original = decision_row(3)
    assert records[3]["features"] == original["features"] and records[3]["reasons"] == original["reasons"]
    assert records[3]["p"] == original["p"] and records[3]["ood"] is original["ood"]
    assert (records[3]["correct"], records[3]["label_source"]) == (True, "gold")
    assert records[2]["correct"] is None


def test_export_since_selects_by_time(log_path, capsys):
    assert main(["log", "export", "--log", str(log_path), "--format", "jsonl",
                 "--since", str(int(T0 + 4 * 60))]) == 0
    ids = [json.loads(line)["response_id"] for line in capsys.readouterr().out.splitlines()]
    assert ids == ["chatcmpl-000004", "chatcmpl-000005"]


def test_parquet_export_matches_the_jsonl_export(log_path, tmp_path):
    parquet = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "export.parquet"
    assert main(["log", "export", "--log", str(log_path), "--format", "parquet", "--out", str(out)]) == 0
    table = parquet.read_table(out).to_pylist()
    assert [row["response_id"] for row in table] == [f"chatcmpl-{i:06d}" for i in range(6)]
    assert json.loads(table[1]["features"]) == decision_row(1)["features"]
    assert table[1]["p"] == decision_row(1)["p"] and table[1]["shadow_debate"] is False


def test_parquet_export_streams_row_groups_with_the_same_rows(log_path, tmp_path, monkeypatch):
    """Batches of 4 rows: 6 rows are 2 row groups, the rows, columns and types those of one
    table written at once (the export's meaning does not depend on the batch size)."""
    pa = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    import imad.decision_log.export as export

    whole = tmp_path / "whole.parquet"
    assert main(["log", "export", "--log", str(log_path), "--format", "parquet", "--out", str(whole)]) == 0
    monkeypatch.setattr(export, "PARQUET_BATCH_ROWS", 4)
    batched = tmp_path / "batched.parquet"
    assert main(["log", "export", "--log", str(log_path), "--format", "parquet", "--out", str(batched)]) == 0
    assert parquet.ParquetFile(whole).num_row_groups == 1
    assert parquet.ParquetFile(batched).num_row_groups == 2
    assert parquet.read_table(batched).equals(parquet.read_table(whole))
    schema = parquet.read_schema(batched)
    assert schema.field("p").type == pa.float64() and schema.field("escalated").type == pa.bool_()
    assert schema.field("features").type == pa.string() and schema.field("label_changes").type == pa.int64()


def test_an_empty_selection_exports_the_columns_and_no_rows(log_path, tmp_path):
    parquet = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "none.parquet"
    assert main(["log", "export", "--log", str(log_path), "--format", "parquet", "--out", str(out),
                 "--model", "no-such-model"]) == 0
    table = parquet.read_table(out)
    assert table.num_rows == 0 and "response_id" in table.column_names and "correct" in table.column_names


def test_labelled_scores_use_single_answer_rows_in_the_time_range(tmp_path):
    path = tmp_path / "log.db"
    with DecisionLog(path) as log:
        for index in range(10):
            row = decision_row(index)
            log.record({**row, "served": "debate" if index == 1 else "single",
                        "p": None if index == 2 else row["p"]})
    store = open_for_reading(path, writable=True)
    for index in range(9):
        set_label(store, Label(f"chatcmpl-{index:06d}", index % 2 == 0))
    store.close()
    result = labelled_scores(path, since=T0, until=T0 + 8 * 60)
    assert result.ids == tuple(f"chatcmpl-{i:06d}" for i in (0, 3, 4, 5, 6, 7))
    assert result.correct.tolist() == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert result.raw_scores.tolist() == [decision_row(i)["raw"] for i in (0, 3, 4, 5, 6, 7)]
    assert (result.first_time, result.last_time) == (T0, T0 + 7 * 60)
    assert (result.skipped_debate_served, result.skipped_unscored) == (1, 1)
    assert "6 decisions of" in result.describe() and "(6 labelled, 3 correct)" in result.describe()
    assert [scorer.describe() for scorer in result.scorers] == ["imad-router-v2"]
    everything = labelled_scores(path, include_unlabelled=True)
    assert everything.rows == 8 and everything.labelled == 7  # row 9: scored, unlabelled
    with pytest.raises(DecisionLogError, match="6 usable, at least 50 needed"):
        labelled_scores(path, since=T0, until=T0 + 8 * 60, min_rows=50)
