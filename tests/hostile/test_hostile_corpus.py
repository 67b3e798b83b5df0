"""Hostile corpus files and responses (issue 14, items 3, 7, 9): a damaged corpus file is a
`DatasetError` naming file and line and is left unchanged; a response nobody foresaw is one
question's failure, never the end of the run; one writer per corpus file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imad.corpus_records import CorpusRecord, read_records
from imad.critique.call import SelfCritique
from imad.errors import DatasetError
from imad.llm.scripted import ScriptedChat
from imad.question import Question, TaskType
from training.corpus import build_corpus
from training.corpus_lock import CorpusLockedError, corpus_lock, lock_path
from training.corpus_store import append_record

REPO_ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = [Question(text=f"Is claim {i} true?", task_type=TaskType.YES_NO_MAYBE, id=f"q{i}",
                      dataset="toy", gold="yes") for i in range(3)]


def critique_json(**overrides: object) -> str:
    fields = {"initial_answer": "yes", "initial_reasoning": "The abstract says so clearly.",
              "critique": "The sample may be too small.", "alternative_answer": "no",
              "final_answer": "yes", "confidence_initial": 0.8, "confidence_critique": 0.3}
    return json.dumps({**fields, **overrides})


def record(question_id: str = "q0", **overrides: object) -> dict[str, object]:
    data = json.loads(CorpusRecord(question_id, "toy", {"text": "Q?"}, "self-critique-v1", "scripted",
                                   {}, "verbal", "raw", None, "parse_error: x", "yes", None, 1, 2,
                                   "stop", 0.1).to_json())
    return {**data, **overrides}


def jline(data: object) -> bytes:
    return json.dumps(data).encode() + b"\n"


R0, R1 = jline(record("q0")), jline(record("q1"))
MISSING_RAW = {k: v for k, v in record().items() if k != "raw_response"}

# (case id, corpus file bytes, expected error text or the number of records read)
CORPUS_CASES: list[tuple[str, bytes, str | int]] = [
    ("valid", R0 + R1, 2),
    ("array-line-in-the-middle", R0 + b"[1, 2]\n" + R1, "c.jsonl:2: a JSON array where"),
    ("number-line", R0 + b"7\n", "c.jsonl:2: a JSON number where"),
    ("null-line", b"null\n" + R0, "c.jsonl:1: a JSON null where"),
    ("string-line", R0 + b'"text"\n' + R1, "c.jsonl:2: a JSON string where"),
    ("byte-0xff", R0 + b'{"question_id": "\xff"}\n' + R1, "c.jsonl:2: not UTF-8 (byte 0xff"),
    ("truncated-in-the-middle", R0 + b'{"question_id": "q\n' + R1, "c.jsonl:2: not valid JSON"),
    ("torn-tail-is-skipped", R0 + R1[:40], 1),
    ("torn-tail-array-is-skipped", R0 + b"[1,", 1),
    ("byte-order-mark", b"\xef\xbb\xbf" + R0, 1),
    ("crlf", R0.replace(b"\n", b"\r\n") + R1.replace(b"\n", b"\r\n"), 2),
    ("blank-lines", b"\n" + R0 + b"\n\n" + R1, 2),
    ("empty-file", b"", 0),
    ("nul-line", R0 + b"\x00\x00\n" + R1, "c.jsonl:2: not valid JSON"),
    ("deeply-nested", R0 + b"[" * 100_000 + b"]" * 100_000 + b"\n", "c.jsonl:2: not valid JSON"),
    ("schema-2", R0 + jline(record("q1", schema=2)), "c.jsonl:2: corpus schema 2"),
    ("schema-missing", jline({k: v for k, v in record().items() if k != "schema"}),
     "c.jsonl:1: corpus schema None"),
    ("field-missing", R0 + jline(MISSING_RAW), "c.jsonl:2: not a corpus record"),
    ("label-text", jline(record(label="x")), "c.jsonl:1: question_id must be text and label 0, 1"),
    ("label-boolean", jline(record(label=True)), "label 0, 1 or null"),
    ("label-two", jline(record(label=2)), "label 0, 1 or null"),
    ("question-id-number", jline(record(question_id=5)), "question_id must be text"),
    ("label-float", jline(record(label=1.0)), "label 0, 1 or null, got 'q0' and 1.0"),
    ("question-a-string", jline(record(question="Q?")), "c.jsonl:1: not a corpus record (question "
                                                        "must be an object with a text, got 'Q?')"),
    ("question-text-missing", jline(record(question={"id": 1})), "question must be an object"),
    ("parsed-a-list", jline(record(parsed=[1])), "parsed must be an object or null, got [1]"),
    ("tokens-negative", jline(record(prompt_tokens=-4)), "prompt_tokens must be a count, got -4"),
    ("tokens-text", jline(record(completion_tokens="9")), "completion_tokens must be a count"),
    ("unknown-field-ignored", jline(record(surprise=[1, 2])), 1),
    ("lone-surrogate-escaped", R0.replace(b'"raw"', b'"r\\ud800w"'), 1),
    ("a-retry-supersedes", R0 + jline(record("q0", raw_response="again")), 1),
]


@pytest.mark.parametrize(("content", "expected"), [c[1:] for c in CORPUS_CASES],
                         ids=[c[0] for c in CORPUS_CASES])
def test_damaged_corpus_files(tmp_path, content, expected):
    path = tmp_path / "c.jsonl"
    path.write_bytes(content)
    if isinstance(expected, int):
        assert len(read_records(path)) == expected
        return
    with pytest.raises(DatasetError) as error:
        read_records(path)
    assert expected in str(error.value)
    assert "the file is unchanged" in str(error.value)
    chat = ScriptedChat(lambda request: critique_json())
    with pytest.raises(DatasetError, match="c.jsonl"):
        build_corpus(QUESTIONS, SelfCritique(chat), path, progress=False)
    assert path.read_bytes() == content and chat.calls == []  # nothing asked, nothing lost


def test_a_directory_as_corpus_file(tmp_path):
    (tmp_path / "c.jsonl").mkdir()
    with pytest.raises(DatasetError, match="c.jsonl is a directory"):
        read_records(tmp_path / "c.jsonl")


BAD_RESPONSES = {
    "400-digit-confidence": critique_json().replace("0.8", "1" + "0" * 400),
    "5000-digit-confidence": critique_json().replace("0.8", "1" + "0" * 5000),
    "lone-surrogate": critique_json(critique="Perhaps \ud800 not"),
    "nan-confidence": critique_json().replace("0.8", "NaN"),
    "empty": "",
    "nested-100000": "[" * 100_000,
}


@pytest.mark.parametrize("response", BAD_RESPONSES.values(), ids=BAD_RESPONSES.keys())
def test_one_bad_response_never_aborts_the_run(tmp_path, response):
    path = tmp_path / "c.jsonl"
    chat = ScriptedChat(lambda r: response if "claim 1" in r.messages[-1].text else critique_json())
    summary = build_corpus(QUESTIONS, SelfCritique(chat), path, progress=False)
    records = {r.question_id: r for r in read_records(path)}
    assert sorted(records) == ["q0", "q1", "q2"] and summary.answered == 3
    assert records["q0"].label == records["q2"].label == 1
    assert records["q1"].raw_response in (response, "")  # kept as sent, or the call's failure
    assert (records["q1"].label is None) == (records["q1"].parsed is None)


def test_an_exception_escaping_the_call_is_saved_and_retried(tmp_path):
    path = tmp_path / "c.jsonl"

    def crash_on_claim_1(request):
        if "claim 1" in request.messages[-1].text:
            raise RuntimeError("a parser bug")
        return critique_json()

    summary = build_corpus(QUESTIONS, SelfCritique(ScriptedChat(crash_on_claim_1)), path,
                           progress=False)
    failed = {r.question_id: r for r in read_records(path)}["q1"]
    assert failed.parse_error.startswith("llm_error: unexpected RuntimeError: a parser bug")
    assert summary.unanswered == 1 and summary.failures == {"llm_error": 1}
    retry = ScriptedChat(lambda request: critique_json())
    build_corpus(QUESTIONS, SelfCritique(retry), path, progress=False)
    assert len(retry.calls) == 1 and "claim 1" in retry.calls[0].messages[-1].text
    assert [r.label for r in read_records(path)] == [1, 1, 1]


def test_a_question_too_large_for_the_context_is_one_failure_not_the_end_of_the_run(tmp_path):
    path = tmp_path / "c.jsonl"
    huge = Question(text="Is this claim true? " + "word " * 2000, task_type=TaskType.YES_NO_MAYBE,
                    id="big", dataset="toy", gold="yes")
    chat = ScriptedChat(lambda request: critique_json(), context_window=1024)
    summary = build_corpus([QUESTIONS[0], huge, QUESTIONS[1]], SelfCritique(chat), path,
                           progress=False)
    records = {r.question_id: r for r in read_records(path)}
    assert sorted(records) == ["big", "q0", "q1"] and summary.unanswered == 1
    assert records["big"].parse_error.startswith("llm_error: InputTooLargeError: ")
    assert "a bug" not in records["big"].parse_error
    assert len(chat.calls) == 2  # the model was never called for the oversized question


def test_questions_without_gold_are_unlabelled_not_wrong(tmp_path):
    path = tmp_path / "c.jsonl"
    unlabelled = Question(text="Is it?", task_type=TaskType.YES_NO_MAYBE, id="u", dataset="toy")
    summary = build_corpus([unlabelled, QUESTIONS[0]],
                           SelfCritique(ScriptedChat(lambda r: critique_json())), path, progress=False)
    assert [r.label for r in read_records(path)] == [None, 1]
    assert (summary.parsed, summary.unlabelled, summary.correct) == (2, 1, 1)
    assert "1 without a gold answer" in summary.lines()[1]


def test_a_lone_surrogate_in_a_response_is_stored_and_reads_back(tmp_path):
    path = tmp_path / "c.jsonl"
    stored = CorpusRecord("q", "toy", {"text": "Q?"}, "v", "m", {}, "verbal", "odd \ud800 text",
                          None, "parse_error: x", None, None, 1, 2, "stop", 0.1)
    append_record(path, stored)
    assert path.read_bytes().decode("utf-8").count("\\ud800") == 1
    assert read_records(path) == [stored]


HOLDER = """
import sys
from pathlib import Path
from training.corpus_lock import corpus_lock
with corpus_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.readline()
"""


def test_a_second_builder_is_refused_while_another_process_writes(tmp_path):
    path = tmp_path / "c.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT,
                              env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
    try:
        assert holder.stdout.readline().strip() == "locked"  # a barrier, not a sleep
        chat = ScriptedChat(lambda request: critique_json())
        with pytest.raises(CorpusLockedError) as error:
            build_corpus(QUESTIONS, SelfCritique(chat), path, progress=False)
        assert f"pid {holder.pid}" in str(error.value) and str(path) in str(error.value)
        assert chat.calls == [] and not path.exists()
    finally:
        holder.communicate("\n", timeout=30)
    assert holder.returncode == 0 and not lock_path(path).exists()
    build_corpus(QUESTIONS, SelfCritique(ScriptedChat(lambda r: critique_json())), path, progress=False)
    assert len(read_records(path)) == 3


def test_the_lock_is_per_open_file_so_one_process_cannot_take_it_twice(tmp_path):
    path = tmp_path / "c.jsonl"
    with corpus_lock(path), pytest.raises(CorpusLockedError, match="another process"):
        build_corpus(QUESTIONS, SelfCritique(ScriptedChat(lambda r: critique_json())), path,
                     progress=False)


def test_a_stale_lock_file_left_by_sigkill_does_not_block(tmp_path):
    path = tmp_path / "c.jsonl"
    lock_path(path).write_text("99999999\n")  # the holder died: flock died with it
    build_corpus(QUESTIONS, SelfCritique(ScriptedChat(lambda r: critique_json())), path, progress=False)
    assert len(read_records(path)) == 3 and not lock_path(path).exists()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
RECORD_LINES = st.one_of(
    st.dictionaries(st.sampled_from(sorted(record())), JSON_VALUES).map(lambda r: {**record(), **r}),
    JSON_VALUES,
).map(lambda value: json.dumps(value).encode())
CORPUS_LINES = st.lists(RECORD_LINES | st.binary(max_size=40).filter(lambda b: b"\n" not in b),
                        max_size=5)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=CORPUS_LINES, final_newline=st.booleans())
def test_property_random_corpus_lines_give_records_or_a_dataset_error(tmp_path, lines, final_newline):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    try:
        records = read_records(path)
    except DatasetError as error:
        assert str(path) in str(error)
        return
    assert all(isinstance(r.question_id, str) and r.label in (0, 1, None) for r in records)


ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=40)
RESPONSES = st.one_of(
    ANY_TEXT,
    st.builds(lambda c, t: critique_json(confidence_initial=c, critique=t),
              st.integers() | st.floats() | st.text(max_size=8), ANY_TEXT),
    st.integers(min_value=10**300, max_value=10**4000).map(lambda n: critique_json().replace("0.8", str(n))),
)


@settings(max_examples=100, deadline=None)
@given(responses=st.lists(RESPONSES, min_size=3, max_size=3))
def test_property_no_response_aborts_corpus_building(responses):
    by_claim = dict(zip((f"claim {i} " for i in range(3)), responses, strict=True))

    def respond(request):
        return next(text for claim, text in by_claim.items() if claim in request.messages[-1].text)

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.jsonl"
        summary = build_corpus(QUESTIONS, SelfCritique(ScriptedChat(respond)), path, progress=False)
        assert summary.answered == 3
        assert sorted(r.question_id for r in read_records(path)) == ["q0", "q1", "q2"]


def test_case_counts():
    """The closing note reports these numbers; they only grow."""
    assert len(CORPUS_CASES) >= 25 and len(BAD_RESPONSES) >= 6
