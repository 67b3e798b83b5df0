"""Hostile table for `imad calibrate --recalibrate`: bad corpora and flags are one `error:` line
with exit 2 (usage) or 3 (a file that cannot be used), and no checkpoint is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imad.cli.main import main
from imad.router.registry import PACKAGE_ROOT
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


def _surrogate_in_question(line: dict) -> None:
    line["question"]["text"] += "\ud800"


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
    # issue 34: text the tokenizer cannot encode is named, not a UnicodeEncodeError
    ("question with a lone surrogate", lambda t: ["--corpus", str(_corpus(
        t, [0, 1] * 10, mutate=_surrogate_in_question))], 3, "question.text holds a lone surrogate"),
    ("parsed field with a lone surrogate", lambda t: ["--corpus", str(_corpus(
        t, [0, 1] * 10, mutate=lambda line: line["parsed"].update(critique="x\udc00y")))], 3,
     "parsed.critique holds a lone surrogate U+DC00"),
    ("no corpus", lambda t: [], 2, "corpus"),
    ("unknown method", lambda t: ["--corpus", str(MEDQA), "--recalibrate", "beta"], 2, "invalid choice"),
    ("with a target rate", lambda t: ["--corpus", str(MEDQA), "--target-trigger-rate", "0.2"], 2,
     "not allowed with"),
    ("with debate tokens", lambda t: ["--corpus", str(MEDQA), "--debate-tokens", "4000"], 2,
     "--token-budget"),
    # issue 35: --recalibrate alone is auto, which takes one class but not too few or no labels
    ("auto, too few labelled", lambda t: ["--corpus", str(_corpus(t, [0, 1] * 4)), "--recalibrate"],
     2, "auto needs at least 10"),
    ("auto, no labels", lambda t: ["--corpus", str(_corpus(t, [None] * 20)), "--recalibrate", "auto"],
     3, "auto needs labelled answers"),
    ("auto, label 2", lambda t: ["--corpus", str(_corpus(t, [0, 1, 2] * 5)), "--recalibrate"], 3,
     "0, 1 or null"),
    ("base rate, too few", lambda t: ["--corpus", str(_corpus(t, [1] * 3)), "--recalibrate",
                                      "base-rate"], 2, "base_rate needs at least 10"),
    ("method with underscore", lambda t: ["--corpus", str(MEDQA), "--recalibrate", "base_rate"], 2,
     "invalid choice"),
    # a version that would escalate every answer is refused unless asked for, and the flag takes
    # no value
    ("escalates every answer", lambda t: ["--corpus", str(MEDQA), "--recalibrate"], 3,
     "would escalate 200/200"),
    ("allow flag with a value", lambda t: ["--corpus", str(MEDQA), "--allow-extreme-rate=yes"], 2,
     "--allow-extreme-rate is a switch and takes no value"),
    ("out inside the package", lambda t: ["--corpus", str(MEDQA), "--out-package"], 2,
     "inside the installed imad package"),
    ("out under a shipped name", lambda t: ["--corpus", str(MEDQA), "--out-shipped"], 2,
     "'imad-router-v2.1' is the name of a shipped router"),
]


@pytest.mark.parametrize("name,arguments,status,message", CASES, ids=[case[0] for case in CASES])
def test_bad_recalibration_is_one_error_line(tmp_path, capsys, name, arguments, status, message):
    args = arguments(tmp_path)
    method = [] if "--recalibrate" in args else ["--recalibrate", "platt"]
    out = tmp_path / "out"
    if "--out-package" in args or "--out-shipped" in args:  # the place is the case
        out = (PACKAGE_ROOT / "_checkpoints" / "new" if "--out-package" in args
               else tmp_path / "imad-router-v2.1")
        args = [arg for arg in args if not arg.startswith("--out-")]
    try:
        code = main(["calibrate", *method, *args, "--out", str(out)])
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    assert code == status
    err = capsys.readouterr().err.strip().splitlines()
    assert any("error:" in line and message in line for line in err), err
    assert "Traceback" not in "\n".join(err)
    assert not out.exists()


OUT_CASES = [
    ("a file", lambda t: _file(t / "taken"), "is a file, not a directory"),
    ("under a file", lambda t: _file(t / "taken") / "inside", "which is a file"),
    ("in /proc", lambda t: Path("/proc/imad-calibrated"), "cannot make a directory in /proc"),
    ("empty", lambda t: "", "is empty; give the new checkpoint's directory"),
    ("blank", lambda t: " ", "is empty; give the new checkpoint's directory"),
]


def _file(path: Path) -> Path:
    path.write_text("not a checkpoint")
    return path


@pytest.mark.parametrize("name,out,message", OUT_CASES, ids=[case[0] for case in OUT_CASES])
@pytest.mark.parametrize("target", [["--recalibrate", "platt"], ["--target-trigger-rate", "0.2"]],
                         ids=["recalibrate", "tau"])
def test_an_unusable_out_is_a_usage_error_before_any_work(tmp_path, capsys, name, out, message, target):
    destination = out(tmp_path)
    code = main(["calibrate", *target, "--corpus", str(_corpus(tmp_path, [0, 1] * 10)), "--out",
                 str(destination)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "error: out (--out): " in err and message in err and "Traceback" not in err
    assert not any(tmp_path.glob(".imad-out-*"))  # the probe leaves nothing behind


EVALUATE_CASES = [("zero", "0", "recalibrate"), ("nine", "9", "recalibrate"),
                  ("negative", "-5", "recalibrate"), ("text", "abc", "invalid ascii_int"),
                  ("float", "2.5", "invalid ascii_int"), ("huge", "1" + "0" * 400, "recalibrate"),
                  ("more than the set", "5000", "10 ≤ N"), ("the whole limit", "100", "10 ≤ N"),
                  ("one short of room to score", "91", "with --limit 100 questions")]


@pytest.mark.parametrize("name,value,message", EVALUATE_CASES, ids=[c[0] for c in EVALUATE_CASES])
def test_evaluate_recalibrate_flag(tmp_path, capsys, monkeypatch, name, value, message):
    from training.evaluate import main as evaluate

    monkeypatch.setenv("IMAD_DATA_DIR", str(tmp_path / "no-data"))  # refused before any read
    try:
        code = evaluate(["--dataset", "medqa", "--data-dir", str(ANSWERED_MEDQA_DIR), "--limit", "100",
                         "--recalibrate", value, "--out", str(tmp_path / "r"), "--no-progress",
                         "--no-feature-cache"])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "error:" in err and message in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


CALIBRATION_ONLY = [("--recalibrate", "50"), ("--workers", "4"), ("--train-corpus", "x.jsonl"),
                    ("--feature-cache", "elsewhere"), ("--no-feature-cache", None)]


@pytest.mark.parametrize("flag,value", CALIBRATION_ONLY, ids=[flag for flag, _ in CALIBRATION_ONLY])
def test_a_calibration_flag_with_e2e_is_refused(tmp_path, capsys, flag, value):
    from training.evaluate import main as evaluate

    code = evaluate(["--e2e", "--dataset", "medqa", flag, *([value] if value else []), "--out",
                     str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    expected = "--feature-cache" if flag == "--no-feature-cache" else flag
    assert f"error: {expected}: only applies to the calibration report" in err
    assert not (tmp_path / "r").exists()


def test_an_evaluation_in_which_every_call_failed_exits_3(tmp_path, capsys):
    """A refused connection answers nothing: the report is written (it says why), the run fails."""
    from training.evaluate import main as evaluate

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    code = evaluate(["--dataset", str(fixtures / "evaluate" / "questions.jsonl"),
                     "--llm", "openai:m@http://127.0.0.1:1/v1?max_retries=0",
                     "--corpus-dir", str(tmp_path / "corpus"), "--out", str(tmp_path / "r"),
                     "--train-corpus", str(fixtures / "corpus_small"), "--no-feature-cache",
                     "--no-progress"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "error: every one of the 10 LLM calls failed, so nothing was scored" in err
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["datasets"]["questions"]["failures"] == {"llm_error": 10}


@pytest.mark.parametrize("target", [["--recalibrate", "platt"], ["--target-trigger-rate", "0.2"]],
                         ids=["recalibrate", "tau"])
def test_an_empty_out_with_overwrite_leaves_the_current_folder_alone(tmp_path, capsys, monkeypatch,
                                                                      target):
    """`--out "$UNSET" --overwrite` wrote config.json and README.md into the current folder."""
    corpus = _corpus(tmp_path, [0, 1] * 10)
    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("mine")
    monkeypatch.chdir(work)
    assert main(["calibrate", *target, "--corpus", str(corpus), "--out", "", "--overwrite"]) == 2
    assert "error: out (--out): is empty" in capsys.readouterr().err
    assert sorted(p.name for p in work.iterdir()) == ["README.md"]
    assert (work / "README.md").read_text() == "mine"


def test_out_dot_names_the_new_router_after_its_folder(tmp_path, capsys, monkeypatch):
    corpus = _corpus(tmp_path, [0, 1] * 10)
    work = tmp_path / "my-router"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["calibrate", "--recalibrate", "platt", "--corpus", str(corpus), "--out", ".",
                 "--allow-extreme-rate"]) == 0
    assert json.loads((work / "config.json").read_text())["name"] == "my-router"
