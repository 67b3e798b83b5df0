"""`imad features "QUESTION" --response FILE.json`: prints the 41 named features."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from features import FEATURE_NAMES, FEATURE_SCHEMA_HASHES
from imad.cli.main import main

RESPONSE = {
    "initial_answer": "yes",
    "initial_reasoning": "Aspirin prevents blood clots. Patients who took aspirin had fewer "
                         "strokes. Therefore the answer is probably yes.",
    "critique": "However, serious side effects might offset the benefit. "
                "The evidence is not conclusive.",
    "alternative_answer": "maybe",
    "final_answer": "yes",
    "confidence_initial": 0.8,
    "confidence_critique": 0.65,
}
QUESTION = "Does aspirin reduce the risk of stroke in older adults?"


@pytest.fixture
def response_file(tmp_path):
    path = tmp_path / "response.json"
    path.write_text(json.dumps(RESPONSE), encoding="utf-8")
    return path


def test_json_output_holds_the_41_named_features(response_file, capsys):
    assert main(["features", QUESTION, "--response", str(response_file), "--json"]) == 0
    values = json.loads(capsys.readouterr().out)
    assert list(values) == list(FEATURE_NAMES)
    # hand-checked values of this response (tests/features/test_features_handwritten.py)
    assert values["q_tokens"] == 10 and values["q_is_yes_no"] == 1
    assert values["r_tokens"] == 17 and values["c_tokens"] == 13
    assert values["c_hedge_count"] == 1 and values["c_negations"] == 1
    assert values["conf_gap"] == pytest.approx(0.15)
    assert values["length_ratio"] == pytest.approx(13 / 17)


def test_text_output_prints_one_named_line_per_feature(response_file, capsys):
    assert main(["features", QUESTION, "--response", str(response_file)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# feature schema v2, hash " + FEATURE_SCHEMA_HASHES[2][:16])
    rows = [line.split() for line in lines[1:]]
    assert [row[0] for row in rows] == list(FEATURE_NAMES)
    assert dict(rows)["r_sentences"] == "3"


def test_schema_version_1_prints_the_v1_vector(tmp_path, capsys):
    # "French" is a NER entity (v1) but an adjective, not a proper noun (v2): 2 vs 1
    path = tmp_path / "response.json"
    path.write_text(json.dumps({**RESPONSE, "critique": "However, the French government "
                                "meets in Paris."}), encoding="utf-8")
    counts = {}
    for version in (1, 2):
        assert main(["features", QUESTION, "--response", str(path), "--schema-version",
                     str(version)]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].startswith(f"# feature schema v{version}, hash "
                                   + FEATURE_SCHEMA_HASHES[version][:16])
        counts[version] = dict(line.split() for line in lines[1:])["c_entities"]
    assert counts == {1: "2", 2: "1"}


def test_an_unknown_schema_version_is_a_usage_error_naming_the_known_ones(response_file, capsys):
    assert main(["features", QUESTION, "--response", str(response_file),
                 "--schema-version", "3"]) == 2
    err = capsys.readouterr().err
    assert "imad features: error: --schema-version: unknown feature schema version 3" in err
    assert "[1, 2]" in err


def test_the_output_of_imad_critique_json_is_accepted(tmp_path, capsys):
    path = tmp_path / "critique.json"
    path.write_text(json.dumps({"status": "ok", "response": RESPONSE}), encoding="utf-8")
    assert main(["features", QUESTION, "--response", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["r_tokens"] == 17


def test_missing_file_exits_2_with_a_message(tmp_path, capsys):
    missing = tmp_path / "nope.json"
    assert main(["features", QUESTION, "--response", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "imad features: error: --response: no such file:" in err and "nope.json" in err


@pytest.mark.parametrize("content, message", [
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "must hold a JSON object, got list"),
    (json.dumps({"initial_answer": "yes"}), "lacks the fields ['initial_reasoning'"),
    (json.dumps({**RESPONSE, "confidence_initial": 80}),
     "confidence_initial must be a number in [0, 1], got 80.0"),
])
def test_bad_response_file_exits_3_with_a_message(tmp_path, capsys, content, message):
    path = tmp_path / "response.json"
    path.write_text(content, encoding="utf-8")
    assert main(["features", QUESTION, "--response", str(path)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("imad features: error:")
    assert message in err, err


def test_the_command_module_imports_nothing_heavy():
    code = ("import sys, imad.cli.features; "
            "print(sorted(m for m in ('spacy', 'textstat', 'features', 'numpy') "
            "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=Path(__file__).resolve().parents[2])
    assert result.stdout.strip() == "[]"
