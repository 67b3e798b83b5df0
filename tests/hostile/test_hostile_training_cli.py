"""Hostile command lines for `python -m training.*` (issue 14, items 7 and 9, and the entry rule).

Each case runs the real command as a subprocess and checks the exit status (2 usage, 3 failed
run), the `error:` line, and that no traceback is shown; `--debug` / IMAD_DEBUG=1 show one.
`training.fit` and `.evaluate` import torch (≈ 20 s each on this machine), so most of their
cases call `main()` in-process; two of them go through the real `python -m`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imad.corpus_records import read_records
from tests.hostile.test_hostile_datasets import LINES
from training.corpus import model_slug

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_DATA = REPO_ROOT / "tests" / "fixtures" / "datasets"
DOWN = "openai:m@http://127.0.0.1:9/v1?max_retries=0&connect_timeout=2"
"""A real HTTP client pointed at a closed port: every call fails fast, as a failed call."""


def run_module(module: str, *arguments: str, cwd: Path, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1",
                   "HF_DATASETS_OFFLINE": "1", "IMAD_DEBUG": "", **(env or {})}
    return subprocess.run([sys.executable, "-m", module, *arguments], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=300)


def line(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


GOOD = line(id="a", question="Is water wet?", task_type="yes_no_maybe", answer="yes") + \
    line(id="b", question="Is fire cold?", task_type="yes_no_maybe", answer="no")
FILES: dict[str, bytes] = {
    "good.jsonl": GOOD,
    "latin1.jsonl": GOOD + '{"question": "Café?"}\n'.encode("latin-1"),
    "array.jsonl": b"[1, 2, 3]\n",
    "empty.jsonl": b"",
    "escape.jsonl": line(question="What is shown?", image="../../../../etc/passwd", answer="x"),
    "absolute.jsonl": line(question="What is shown?", image="/etc/passwd"),
    "not_a_choice.jsonl": line(question="Pick", choices=["red", "green"], answer="blue"),
    "choices_string.jsonl": line(question="Pick", choices="red", answer="r"),
    "question_null.jsonl": line(question=None, answer="x"),
    "duplicate.jsonl": GOOD + line(id="a", question="Again?"),
}

# (case id, arguments after `python -m training.corpus`, exit status, text in stderr)
CORPUS_CASES: list[tuple[str, list[str], int, str]] = [
    ("unknown-dataset", ["--dataset", "imagenet"], 2, "unknown dataset 'imagenet'"),
    ("missing-file", ["--dataset", "missing.jsonl"], 3, "missing.jsonl not found"),
    ("directory-as-dataset", ["--dataset", "folder.jsonl"], 3, "folder.jsonl is a directory"),
    ("missing-data-dir", ["--dataset", "pubmedqa", "--data-dir", "nowhere"], 3,
     "data directory nowhere does not exist"),
    ("bad-llm-backend", ["--dataset", "good.jsonl", "--llm", "bogus:x"], 2, "unknown back-end 'bogus'"),
    ("bad-llm-option", ["--dataset", "good.jsonl", "--llm", "openai:m@http://x/v1?nope=1"], 2,
     "--llm option nope: unknown setting of OpenAICompatibleChat"),
    ("cache-is-a-directory", ["--dataset", "good.jsonl", "--llm", f"cached:/tmp::{DOWN}"], 2,
     "/tmp is a directory"),
    ("cache-is-not-sqlite", ["--dataset", "good.jsonl", "--llm", f"cached:good.jsonl::{DOWN}"], 2,
     "cannot open good.jsonl as SQLite"),
    ("non-utf8-dataset", ["--dataset", "latin1.jsonl"], 3, "latin1.jsonl:3: not UTF-8 (byte 0xe9"),
    ("json-array-line", ["--dataset", "array.jsonl"], 3, "array.jsonl:1: a JSON array where"),
    ("empty-dataset", ["--dataset", "empty.jsonl"], 3, "empty.jsonl has no questions"),
    ("image-escapes", ["--dataset", "escape.jsonl"], 3,
     "escape.jsonl:1: image '../../../../etc/passwd' resolves outside"),
    ("image-absolute", ["--dataset", "absolute.jsonl"], 3, "absolute.jsonl:1: image '/etc/passwd'"),
    ("answer-not-a-choice", ["--dataset", "not_a_choice.jsonl"], 3, "answer 'blue' is not"),
    ("choices-a-string", ["--dataset", "choices_string.jsonl"], 3, "'choices' must be an array"),
    ("question-null", ["--dataset", "question_null.jsonl"], 3, "'question' is missing or null"),
    ("duplicate-ids", ["--dataset", "duplicate.jsonl"], 3, "lines 1 and 3 have the same id 'a'"),
    ("limit-zero", ["--dataset", "good.jsonl", "--limit", "0"], 2,
     "limit (--limit): must be none or an integer in [1, 1000000], got 0"),
    ("limit-negative", ["--dataset", "good.jsonl", "--limit", "-1"], 2,
     "must be none or an integer in [1, 1000000], got -1"),
    ("limit-text", ["--dataset", "good.jsonl", "--limit", "all"], 2,
     "--limit: invalid ascii_int value: 'all'"),
    ("workers-zero", ["--dataset", "good.jsonl", "--workers", "0"], 2,
     "workers (--workers): must be an integer in [1, 256], got 0"),
    ("max-tokens-tiny", ["--dataset", "good.jsonl", "--llm", DOWN, "--max-tokens", "1"], 2,
     "max_tokens (--max-tokens): must be an integer in [32, 32768], got 1"),
    ("no-dataset", [], 2, "the following arguments are required: --dataset"),
    ("every-call-fails", ["--dataset", "good.jsonl", "--llm", DOWN], 3,
     "2 of 2 questions got no answer"),
]


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    for name, content in FILES.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "folder.jsonl").mkdir()
    return tmp_path


@pytest.mark.parametrize(("arguments", "status", "message"), [c[1:] for c in CORPUS_CASES],
                         ids=[c[0] for c in CORPUS_CASES])
def test_corpus_command_errors(workdir, arguments, status, message):
    result = run_module("training.corpus", *arguments, "--out-dir", "out", "--no-progress",
                        cwd=workdir)
    assert result.returncode == status, result.stderr
    assert "error:" in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr


def test_failed_calls_are_saved_and_retried(workdir):
    result = run_module("training.corpus", "--dataset", "good.jsonl", "--llm", DOWN,
                        "--out-dir", "out", "--no-progress", cwd=workdir)
    assert result.returncode == 3 and "a rerun of this command retries them" in result.stderr
    corpus = workdir / "out" / model_slug("m") / "good.jsonl"
    records = read_records(corpus)
    assert sorted(r.question_id for r in records) == ["a", "b"]
    assert all(r.parse_error.startswith("llm_error: LLMConnectionError") for r in records)
    again = run_module("training.corpus", "--dataset", "good.jsonl", "--llm", DOWN,
                       "--out-dir", "out", "--no-progress", cwd=workdir)
    assert again.returncode == 3 and "2 of 2 questions got no answer" in again.stderr
    assert len(corpus.read_text().splitlines()) == 4  # asked again, the failures kept


def test_a_damaged_corpus_file_stops_the_command_and_stays_as_it_was(workdir):
    corpus = workdir / "out" / model_slug("m") / "good.jsonl"
    corpus.parent.mkdir(parents=True)
    corpus.write_bytes(b"[1, 2]\n")
    result = run_module("training.corpus", "--dataset", "good.jsonl", "--llm", DOWN,
                        "--out-dir", "out", "--no-progress", cwd=workdir)
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert "good.jsonl:1: a JSON array" in result.stderr and "the file is unchanged" in result.stderr
    assert corpus.read_bytes() == b"[1, 2]\n"


def test_a_second_corpus_builder_is_refused(workdir):
    corpus = workdir / "out" / model_slug("m") / "good.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; "
         "from training.corpus_lock import corpus_lock\n"
         "with corpus_lock(Path(sys.argv[1])):\n    print('locked', flush=True); sys.stdin.readline()",
         str(corpus)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        result = run_module("training.corpus", "--dataset", "good.jsonl", "--llm", DOWN,
                            "--out-dir", "out", "--no-progress", cwd=workdir)
    finally:
        holder.communicate("\n", timeout=30)
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert f"is being written by another process (pid {holder.pid}" in result.stderr


@pytest.mark.parametrize("debug", [["--debug"], []], ids=["flag", "environment"])
def test_debug_shows_the_traceback(workdir, debug):
    result = run_module("training.corpus", "--dataset", "array.jsonl", *debug, cwd=workdir,
                        env={} if debug else {"IMAD_DEBUG": "1"})
    assert result.returncode != 0
    assert "Traceback" in result.stderr and "DatasetError" in result.stderr


def test_help_documents_the_exit_status(workdir):
    result = run_module("training.corpus", "--help", cwd=workdir)
    assert result.returncode == 0
    words = " ".join(result.stdout.split())  # argparse wraps the epilog
    assert "2 usage error" in words and "3 failed run" in words and "--debug" in words


def test_real_shared_datasets_go_through_the_command(workdir, data_dir):
    """The real datasets pass every check; the command then fails only at the closed port."""
    result = run_module("training.corpus", "--dataset", "pubmedqa", "--dataset", "gqa",
                        "--limit", "2", "--data-dir", str(data_dir), "--llm", DOWN,
                        "--out-dir", "out", "--no-progress", cwd=workdir)
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert "pubmedqa: 2 questions" in result.stdout and "gqa: 2 questions" in result.stdout
    assert "4 of 4 questions got no answer" in result.stderr


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.long_e2e
def test_a_real_corpus_run_with_the_embedded_model_exits_0(workdir, fixture_data_dir):
    """The happy path of the same command, on the real model: exit 0, one record, lock released."""
    result = run_module("training.corpus", "--dataset", "pubmedqa", "--limit", "1", "--data-dir",
                        str(fixture_data_dir), "--llm", "local", "--out-dir", "out",
                        "--no-progress", cwd=workdir)
    assert result.returncode == 0, result.stderr
    (corpus,) = (workdir / "out").glob("*/pubmedqa.jsonl")
    (record,) = read_records(corpus)
    assert record.model_id.startswith("SmolLM2") and record.gold in ("yes", "no", "maybe")
    assert (record.label is None) == (record.parsed is None)
    assert not list((workdir / "out").glob("*/*.lock"))


def test_fit_and_evaluate_as_real_commands(workdir):
    corpus = workdir / "c.jsonl"
    corpus.write_bytes(b"\xef\xbb\xbf" + b"[1]\n")
    fit = run_module("training.fit", "--corpus", str(corpus), "--no-progress-bar", cwd=workdir)
    assert fit.returncode == 3 and "Traceback" not in fit.stderr
    assert "python -m training.fit: error:" in fit.stderr and "c.jsonl:1: a JSON array" in fit.stderr
    evaluate = run_module("training.evaluate", "--dataset", "imagenet", "--no-progress",
                          cwd=workdir)
    assert evaluate.returncode == 2 and "Traceback" not in evaluate.stderr
    assert "python -m training.evaluate: error:" in evaluate.stderr
    assert "unknown dataset 'imagenet'" in evaluate.stderr


# (case id, arguments of `python -m training.fit`, exit status, text in stderr) — in-process
FIT_CASES: list[tuple[str, list[str], int, str]] = [
    ("batch-size-zero", ["--batch-size", "0"], 2,
     "batch_size (--batch-size): must be an integer in [1, 1048576], got 0"),
    ("learning-rate-nan", ["--learning-rate", "nan"], 2, "learning_rate (--learning-rate)"),
    ("missing-corpus", ["--corpus", "missing"], 3, "does not exist"),
    ("corpus-array-line", ["--corpus", "array.jsonl"], 3, "array.jsonl:1: a JSON array"),
    ("corpus-non-utf8", ["--corpus", "latin1.jsonl"], 3, "latin1.jsonl:1"),
    ("config-missing", ["--config", "none.json"], 2, "no such file"),
    ("config-a-directory", ["--config", "folder.jsonl"], 2, "a directory, not a regular file"),
    ("config-non-utf8", ["--config", "latin1.jsonl"], 2, "cannot parse"),
    ("config-a-list", ["--config", "array.jsonl"], 2, "must hold a table/object"),
    ("config-corpus-a-number", ["--config", "corpus_number.json"], 2, "corpus (--corpus): must be"),
]


@pytest.mark.parametrize(("arguments", "status", "message"), [c[1:] for c in FIT_CASES],
                         ids=[c[0] for c in FIT_CASES])
def test_fit_errors(workdir, monkeypatch, capsys, arguments, status, message):
    from training.fit import main

    (workdir / "corpus_number.json").write_text('{"corpus": 5}')
    (workdir / "latin1.jsonl").write_bytes("{\"a\": \"é\"}\n".encode("latin-1"))
    monkeypatch.chdir(workdir)
    monkeypatch.delenv("IMAD_DEBUG", raising=False)
    assert main([*arguments, "--no-progress-bar"]) == status
    error = capsys.readouterr().err
    assert error.startswith("python -m training.fit: error:") and message in error


# (case id, arguments of `python -m training.evaluate`, exit status, text in stderr) — in-process
EVALUATE_CASES: list[tuple[str, list[str], int, str]] = [
    ("limit-zero", ["--dataset", "good.jsonl", "--limit", "0"], 2,
     "must be none or an integer in [1, 1000000], got 0"),
    ("limit-negative", ["--dataset", "good.jsonl", "--limit", "-1"], 2,
     "must be none or an integer in [1, 1000000], got -1"),
    ("unknown-dataset", ["--dataset", "imagenet"], 2, "unknown dataset 'imagenet'"),
    ("array-line", ["--dataset", "array.jsonl"], 3, "array.jsonl:1: a JSON array"),
    ("image-escapes", ["--dataset", "escape.jsonl"], 3, "resolves outside"),
    ("duplicate-ids", ["--dataset", "duplicate.jsonl"], 3, "have the same id"),
    ("e2e-flag-without-e2e", ["--dataset", "good.jsonl", "--tau", "0.5"], 2, "add --e2e"),
    ("deferral-without-e2e", ["--dataset", "good.jsonl", "--deferral"], 2,
     "--deferral: only applies to the end-to-end benchmark; add --e2e"),
    ("deferral-with-tau", ["--e2e", "--deferral", "--dataset", "good.jsonl", "--tau", "0.3"], 2,
     "runs the iMAD methods at τ = 1 (every question escalated); drop --tau"),
    ("deferral-without-imad", ["--e2e", "--deferral", "--dataset", "good.jsonl", "--methods", "cot",
                               "mad"], 2,
     "needs an iMAD method (imad_acemad, imad_svrmad) in --methods; got cot, mad"),
]


@pytest.mark.parametrize("value", ["1e999", "nan", "-1", "9" * 400, "[[[[[]]]]]", "\ud800", "true"])
def test_deferral_takes_no_value(value, capsys):
    """--deferral is a switch: any value is a usage error (exit 2, `error:`), never a traceback."""
    from training.evaluate import main

    try:
        status = main(["--e2e", f"--deferral={value}", "--dataset", "medqa"])
    except SystemExit as exit_info:  # argparse refuses the flag itself
        status = exit_info.code
    error = capsys.readouterr().err
    assert status == 2 and "error: argument --deferral: ignored explicit argument" in error
    assert "Traceback" not in error


@pytest.mark.parametrize(("arguments", "status", "message"), [c[1:] for c in EVALUATE_CASES],
                         ids=[c[0] for c in EVALUATE_CASES])
def test_evaluate_errors(workdir, monkeypatch, capsys, arguments, status, message):
    from training.evaluate import main

    monkeypatch.chdir(workdir)
    monkeypatch.delenv("IMAD_DEBUG", raising=False)
    assert main([*arguments, "--llm", DOWN, "--out", "out", "--no-progress"]) == status
    error = capsys.readouterr().err
    assert error.startswith("python -m training.evaluate: error:") and message in error
    assert not (workdir / "out").exists()


def test_fit_and_evaluate_help_document_the_exit_status(capsys):
    from training.evaluate import main as evaluate_main
    from training.fit import main as fit_main

    for main in (fit_main, evaluate_main):
        with pytest.raises(SystemExit) as exit_info:
            main(["--help"])
        assert exit_info.value.code == 0
        words = " ".join(capsys.readouterr().out.split())
        assert "3 failed run" in words and "--debug" in words


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINES, max_size=4),
       limit=st.integers(-3, 3).map(str) | st.text(max_size=4).filter(lambda t: "\x00" not in t))
def test_property_random_dataset_files_end_in_exit_2_or_3_never_a_bug(tmp_path, capsys, lines, limit):
    """Random files and `--limit` values through the command: a typed error or a failed run."""
    from training.corpus import main

    path = tmp_path / "random.jsonl"
    path.write_bytes(b"\n".join(lines))
    try:
        status = main(["--dataset", str(path), "--llm", DOWN, "--out-dir", str(tmp_path / "out"),
                       "--no-progress", f"--limit={limit}"])
    except SystemExit as exit_info:  # argparse refuses the flag itself
        status = exit_info.code
    error = capsys.readouterr().err
    assert status in (2, 3) and "error:" in error
    assert "unexpected" not in error and "Traceback" not in error


def test_case_counts():
    """The closing note reports these numbers; they only grow."""
    assert (len(CORPUS_CASES), len(FIT_CASES), len(EVALUATE_CASES)) >= (24, 10, 10)
