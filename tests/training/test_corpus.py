"""Corpus building: records, labels, resume, and a SIGKILL mid-run losing at most one record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from imad.corpus_records import read_records
from imad.critique.call import SelfCritique
from imad.errors import DatasetError, LLMServerError
from imad.llm.scripted import ScriptedChat
from training.corpus import build_corpus, model_slug, order_questions
from training.corpus_store import append_record
from training.data import load_questions

REPO_ROOT = Path(__file__).resolve().parents[2]


def answer_yes(request):
    return json.dumps({"initial_answer": "yes", "initial_reasoning": "The abstract says so clearly.",
                       "critique": "Maybe the sample was too small to be sure.",
                       "alternative_answer": "maybe", "final_answer": "yes",
                       "confidence_initial": 70, "confidence_critique": 20})


def test_records_labels_and_summary(fixture_data_dir, tmp_path):
    questions = load_questions("pubmedqa", data_dir=fixture_data_dir, limit=6)
    path = tmp_path / "pubmedqa.jsonl"
    summary = build_corpus(questions, SelfCritique(ScriptedChat(answer_yes)), path, progress=False)
    records = read_records(path)
    assert [r.question_id for r in records] == [q.id for q in questions]
    assert [r.label for r in records] == [int(q.gold == "yes") for q in questions]
    assert summary.answered == 6 and summary.correct == sum(r.label for r in records)
    first = records[0]
    assert first.prompt_version == "self-critique-v1" and first.model_id == "scripted"
    assert first.decoding["temperature"] == 0.0 and first.confidence_source == "verbal"
    assert "context" not in first.question and first.extra["context_chars"] > 0


def test_parse_failures_are_kept_with_no_label(fixture_data_dir, tmp_path):
    questions = load_questions("pubmedqa", data_dir=fixture_data_dir, limit=2)
    path = tmp_path / "c.jsonl"
    summary = build_corpus(questions, SelfCritique(ScriptedChat(lambda r: "garbage")), path,
                           progress=False)
    assert [r.label for r in read_records(path)] == [None, None]
    assert summary.failures == {"parse_error": 2}


def test_a_corpus_from_another_setup_is_refused_and_kept(fixture_data_dir, tmp_path):
    questions = load_questions("pubmedqa", data_dir=fixture_data_dir, limit=3)
    path = tmp_path / "c.jsonl"
    build_corpus(questions[:2], SelfCritique(ScriptedChat(answer_yes)), path, progress=False)
    before = path.read_bytes()
    later = ScriptedChat(answer_yes)
    with pytest.raises(DatasetError, match=r"does not fit this run \(max_text_chars 240 instead of 400"):
        build_corpus(questions, SelfCritique(later, max_text_chars=400), path, progress=False)
    assert path.read_bytes() == before and later.calls == []


def test_llm_failures_are_retried_by_the_next_run(fixture_data_dir, tmp_path):
    questions = load_questions("pubmedqa", data_dir=fixture_data_dir, limit=3)
    path = tmp_path / "c.jsonl"

    def down(request):
        raise LLMServerError("HTTP 503 from the model server")

    first = build_corpus(questions, SelfCritique(ScriptedChat(down)), path, progress=False)
    assert first.failures == {"llm_error": 3}
    retry = ScriptedChat(answer_yes)
    build_corpus(questions, SelfCritique(retry), path, progress=False)
    assert len(retry.calls) == 3
    records = read_records(path)
    assert [r.question_id for r in records] == [q.id for q in questions]
    assert all(r.parsed is not None for r in records)
    assert len(path.read_text().splitlines()) == 6  # the failures stay on disk, superseded


def test_rerun_skips_what_is_done(fixture_data_dir, tmp_path):
    questions = load_questions("pubmedqa", data_dir=fixture_data_dir, limit=5)
    path = tmp_path / "c.jsonl"
    chat = ScriptedChat(answer_yes)
    build_corpus(questions[:3], SelfCritique(chat), path, progress=False)
    build_corpus(questions, SelfCritique(chat), path, progress=False)
    assert len(chat.calls) == 5
    assert len(read_records(path)) == 5


def test_torn_last_line_is_repaired_and_other_damage_reported(fixture_data_dir, tmp_path):
    questions = load_questions("pubmedqa", data_dir=fixture_data_dir, limit=3)
    path = tmp_path / "c.jsonl"
    build_corpus(questions[:2], SelfCritique(ScriptedChat(answer_yes)), path, progress=False)
    with path.open("a") as handle:
        handle.write('{"question_id": "half a rec')
    assert len(read_records(path)) == 2
    build_corpus(questions, SelfCritique(ScriptedChat(answer_yes)), path, progress=False)
    assert [r.question_id for r in read_records(path)] == [q.id for q in questions]
    path.write_text("not json\n" + path.read_text())
    with pytest.raises(DatasetError, match="c.jsonl:1"):
        read_records(path)


def test_order_is_a_stable_permutation(fixture_data_dir):
    questions = load_questions("pubmedqa", data_dir=fixture_data_dir)
    assert order_questions(questions, 0) == order_questions(questions, 0)
    assert order_questions(questions, 0) != questions
    assert sorted(q.id for q in order_questions(questions, 0)) == sorted(q.id for q in questions)
    assert model_slug("SmolLM2-135M-Instruct Q4_1") == "smollm2-135m-instruct-q4_1"


STOPPING_SCRIPT = """
import json, sys, threading
from imad.critique.call import SelfCritique
from imad.llm.scripted import ScriptedChat
from training.corpus import build_corpus
from training.data import load_questions
from tests.training.test_corpus import answer_yes

calls = 0

def stopping(request):
    # Call number {stop_at} tells the parent it is in flight, then never returns.
    global calls
    calls += 1
    if calls == {stop_at}:
        print("in flight", flush=True)
        threading.Event().wait()
    return answer_yes(request)

questions = load_questions("pubmedqa", data_dir={data!r})
build_corpus(questions, SelfCritique(ScriptedChat(stopping)), __import__("pathlib").Path({out!r}),
             progress=False)
"""


def test_sigkill_mid_run_loses_at_most_the_in_flight_record(fixture_data_dir, tmp_path):
    """Killed while its 6th call is in flight, the run has written exactly 5 whole records; a
    rerun adds the rest, in order. The child says when it is blocked, so no timing is involved."""
    out = tmp_path / "c.jsonl"
    script = STOPPING_SCRIPT.format(data=str(fixture_data_dir), out=str(out), stop_at=6)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout.readline() == "in flight\n"  # EOF ("") if the child died instead
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    process.stdout.close()
    written = [r.question_id for r in read_records(out)]
    questions = load_questions("pubmedqa", data_dir=fixture_data_dir)
    assert len(written) == 5 and len(questions) > 6
    rerun = STOPPING_SCRIPT.format(data=str(fixture_data_dir), out=str(out), stop_at=0)
    subprocess.run([sys.executable, "-c", rerun], env=env, check=True, timeout=120)
    final = [r.question_id for r in read_records(out)]
    assert final == [q.id for q in questions]  # nothing lost, nothing repeated, same order
    assert final[: len(written)] == written


def test_append_is_one_line_per_record(tmp_path):
    from imad.corpus_records import CorpusRecord

    record = CorpusRecord("q", "d", {"text": "t"}, "v", "m", {}, "verbal", "raw", None, "why", None,
                          None, 1, 2, "stop", 0.1)
    other = CorpusRecord("q2", "d", {"text": "t"}, "v", "m", {}, "verbal", "raw", None, "why", None,
                         None, 1, 2, "stop", 0.1)
    append_record(tmp_path / "x.jsonl", record)
    append_record(tmp_path / "x.jsonl", other)
    assert (tmp_path / "x.jsonl").read_text().count("\n") == 2
    assert read_records(tmp_path / "x.jsonl") == [record, other]
