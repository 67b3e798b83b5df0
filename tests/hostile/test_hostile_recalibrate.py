"""Hostile table for `imad calibrate --recalibrate`: bad corpora and flags are one `error:` line
with exit 2 (usage) or 3 (a file that cannot be used), and no checkpoint is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imad.cli.main import main
from tests.conftest import ANSWERED_MEDQA_DIR

MEDQA = Path(__file__).resolve().parents[2] / "corpus" / "smollm2-135m-instruct-q4_1" / "eval" / "medqa.jsonl"


def _corpus(tmp_path: Path, labels: list, *, mutate=None) -> Path:
    lines = [json.loads(line) for line in MEDQA.read_text().splitlines() if line.strip()]
    lines = [line for line in lines if line.get("parsed") is not None][: len(labels)]
    for line, label in zip(lines, labels, strict=False):
        line["label"] = label
        if mutate:
            mutate(line)
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


CASES = [
    ("label 2", lambda t: ["--corpus", str(_corpus(t, [0, 1, 2] * 5))], 3, "0, 1 or null"),
    ("label text", lambda t: ["--corpus", str(_corpus(t, ["1", 0] * 8))], 3, "0, 1 or null"),
    ("label float", lambda t: ["--corpus", str(_corpus(t, [0.5, 1] * 8))], 3, "0, 1 or null"),
    ("too few labelled", lambda t: ["--corpus", str(_corpus(t, [0, 1] * 4))], 2, "at least 10"),
    ("one class", lambda t: ["--corpus", str(_corpus(t, [1] * 20))], 2, "all 20 answers are right"),
    ("no labels", lambda t: ["--corpus", str(_corpus(t, [None] * 20))], 3, "hold none"),
    ("parsed not an answer", lambda t: ["--corpus", str(_corpus(
        t, [0, 1] * 10, mutate=lambda line: line.update(parsed={"x": 1})))], 3, "not a self-critique"),
    ("missing file", lambda t: ["--corpus", str(t / "nope.jsonl")], 3, "does not exist"),
    ("no corpus", lambda t: [], 2, "corpus"),
    ("unknown method", lambda t: ["--corpus", str(MEDQA), "--recalibrate", "beta"], 2, "invalid choice"),
    ("with a target rate", lambda t: ["--corpus", str(MEDQA), "--target-trigger-rate", "0.2"], 2,
     "not allowed with"),
    ("with debate tokens", lambda t: ["--corpus", str(MEDQA), "--debate-tokens", "4000"], 2,
     "--token-budget"),
]


@pytest.mark.parametrize("name,arguments,status,message", CASES, ids=[case[0] for case in CASES])
def test_bad_recalibration_is_one_error_line(tmp_path, capsys, name, arguments, status, message):
    args = arguments(tmp_path)
    method = [] if "--recalibrate" in args else ["--recalibrate", "platt"]
    out = tmp_path / "out"
    try:
        code = main(["calibrate", *method, *args, "--out", str(out)])
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    assert code == status
    err = capsys.readouterr().err.strip().splitlines()
    assert any("error:" in line and message in line for line in err), err
    assert "Traceback" not in "\n".join(err)
    assert not out.exists()


EVALUATE_CASES = [("zero", "0", "recalibrate"), ("nine", "9", "recalibrate"),
                  ("negative", "-5", "recalibrate"), ("text", "abc", "invalid ascii_int"),
                  ("float", "2.5", "invalid ascii_int"), ("huge", "1" + "0" * 400, "recalibrate"),
                  ("more than the set", "5000", "10 ≤ N")]


@pytest.mark.parametrize("name,value,message", EVALUATE_CASES, ids=[c[0] for c in EVALUATE_CASES])
def test_evaluate_recalibrate_flag(tmp_path, capsys, name, value, message):
    from training.evaluate import main as evaluate

    try:
        code = evaluate(["--dataset", "medqa", "--data-dir", str(ANSWERED_MEDQA_DIR), "--limit", "100",
                         "--recalibrate", value, "--out", str(tmp_path / "r"), "--no-progress",
                         "--no-feature-cache"])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "error:" in err and message in err and "Traceback" not in err
