"""Hostile dataset files (issue 14, items 5, 7, 9): every damage a typed `DatasetError` naming
file and line, or a clearly defined result — never another exception, never a silent label.

`GENERIC_CASES` feed `python -m training.corpus --dataset FILE.jsonl` files to the loader;
`BUILT_IN_CASES` put damaged files where a registered dataset (read through HF `datasets`) is
expected. A hypothesis property per surface throws random lines and rows at both.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imad.errors import ConfigError, DatasetError
from imad.question import TaskType
from training.data import load_questions
from training.data.gqa import gqa_question
from training.data.hf_loading import rows_to_questions
from training.data.pubmedqa import pubmedqa_question


def line(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


OK = line(id="q1", question="Is the sky blue?", task_type="yes_no_maybe", answer="yes")
MC = {"question": "Pick one", "choices": ["red", "green"]}

# (case id, file bytes, expected error text or the number of questions loaded)
GENERIC_CASES: list[tuple[str, bytes, str | int]] = [
    ("truncated-json", b'{"question": "Is it?", "ans', "mine.jsonl:1: not valid JSON"),
    ("truncated-second-line", OK + b'{"question": "Is', "mine.jsonl:2: not valid JSON"),
    ("byte-order-mark", b"\xef\xbb\xbf" + OK, 1),
    ("crlf-line-ends", OK.replace(b"\n", b"\r\n") * 1 + line(question="Q2?").replace(b"\n", b"\r\n"), 2),
    ("blank-lines-only", b"\n\n  \n", 0),
    ("empty-file", b"", 0),
    ("nul-inside-string", b'{"question": "a\x00b"}\n', "mine.jsonl:1: not valid JSON"),
    ("nul-before-object", b'\x00{"question": "a"}\n', "mine.jsonl:1: not valid JSON"),
    ("byte-0xff", OK + b'{"question": "caf\xff"}\n', "mine.jsonl:2: not UTF-8 (byte 0xff"),
    ("latin-1-text", OK + '{"question": "café?"}\n'.encode("latin-1"), "mine.jsonl:2: not UTF-8"),
    ("utf-16-file", OK.decode().encode("utf-16"), "mine.jsonl:1: not UTF-8"),
    ("json-array-line", b"[1, 2]\n", "mine.jsonl:1: a JSON array where a JSON object"),
    ("json-number-line", OK + b"42\n", "mine.jsonl:2: a JSON number where"),
    ("json-string-line", b'"What?"\n', "mine.jsonl:1: a JSON string where"),
    ("json-null-line", b"null\n", "mine.jsonl:1: a JSON null where"),
    ("json-bool-line", b"true\n", "mine.jsonl:1: a JSON boolean where"),
    ("deeply-nested", b"[" * 100_000 + b"]" * 100_000 + b"\n", "mine.jsonl:1: not valid JSON"),
    ("5000-digit-number", b'{"question": "Q?", "answer": 1' + b"0" * 5000 + b"}\n",
     "mine.jsonl:1: not valid JSON"),
    ("question-null", line(question=None, answer="x"), "mine.jsonl:1: the field 'question' is missing"),
    ("question-missing", line(answer="x"), "mine.jsonl:1: the field 'question' is missing"),
    ("question-number", line(question=5), "'question' must be a string, got number 5"),
    ("question-array", line(question=["a"]), "'question' must be a string, got array"),
    ("question-empty", line(question="  "), "mine.jsonl:1: the question text is empty"),
    ("choices-string", line(question="Q?", choices="red"), "'choices' must be an array, got string"),
    ("choices-numbers", line(question="Q?", choices=[1, 2]), "item 1 is number 1"),
    ("choices-one", line(question="Q?", choices=["only"]), "at least 2 choices"),
    ("choices-27", line(question="Q?", choices=[f"c{i}" for i in range(27)]), "at most 26"),
    ("choice-empty", line(question="Q?", choices=["a", " "]), "a choice is empty"),
    ("answer-not-a-choice", line(**MC, answer="Z"), "answer 'Z' is not an option letter"),
    ("answer-letter-out-of-range", line(**MC, answer="C"), "answer 'C' is not an option letter"),
    ("answer-choice-text", line(**MC, answer="green"), 1),
    ("answer-boolean", line(question="Q?", answer=True), "'answer' must be a string or a number"),
    ("answer-object", line(question="Q?", answer={"a": 1}), "got object"),
    ("answer-missing-is-unlabelled", line(**MC), 1),
    ("answer-not-yes-no-maybe", line(question="Q?", task_type="yes_no_maybe", answer="perhaps"),
     "answer 'perhaps' is not yes, no or maybe"),
    ("answer-not-a-number", line(question="Q?", task_type="numeric", answer="many"),
     "answer 'many' is not a number"),
    ("answer-nan", b'{"question": "Q?", "task_type": "numeric", "answer": NaN}\n',
     "answer 'nan' is not a number"),
    ("answer-integer", line(question="Q?", task_type="numeric", answer=42), 1),
    ("answer-punctuation-only", line(question="Q?", answer="?!"), "not a non-empty short answer"),
    ("task-type-unknown", line(question="Q?", task_type="essay"), "task_type 'essay' is not one of"),
    ("task-type-number", line(question="Q?", task_type=3), "'task_type' must be a string"),
    ("id-duplicate", OK + OK, "mine.jsonl:2: lines 1 and 2 have the same id 'q1'"),
    ("id-duplicate-far", OK + b"\n" + line(question="x?") + OK, "lines 1 and 4 have the same id"),
    ("id-float", line(question="Q?", id=1.5), "'id' must be a string or an integer"),
    ("id-boolean", line(question="Q?", id=True), "'id' must be a string or an integer"),
    ("context-number", line(question="Q?", context=7), "'context' must be a string"),
    ("dataset-array", line(question="Q?", dataset=["a"]), "'dataset' must be a string"),
    ("huge-question", line(question="w " * 15_000), "30,000 characters; the limit is 20,000"),
    ("huge-context-2mb", line(question="Q?", context="x" * 2_000_000), "the limit is 20,000"),
    ("lone-surrogate", b'{"question": "Is \\ud800 it?"}\n', "lone surrogate"),
    ("lone-surrogate-in-choice", b'{"question": "Q", "choices": ["a", "\\udfff"]}\n',
     "choice 2 is not valid Unicode text: a lone surrogate"),
    ("bad-line-after-blank", OK + b"\n" + b"{]\n", "mine.jsonl:3: not valid JSON"),
    ("image-parent-escape", line(question="What is shown?", image="../../../../etc/passwd", answer="x"),
     "resolves outside"),
    ("image-absolute-outside", line(question="What?", image="/etc/passwd"), "resolves outside"),
    ("image-missing", line(question="What?", image="nowhere.jpg"), "'nowhere.jpg' not found"),
    ("image-number", line(question="What?", image=3), "'image' must be a string"),
    ("image-nul", b'{"question": "What?", "image": "a\\u0000.jpg"}\n', "is not a file name"),
    ("duplicate-keys-last-wins", b'{"question": "Q1?", "question": "Q2?"}\n', 1),
]


@pytest.mark.parametrize(("content", "expected"), [c[1:] for c in GENERIC_CASES],
                         ids=[c[0] for c in GENERIC_CASES])
def test_damaged_generic_files(tmp_path, content, expected):
    path = tmp_path / "mine.jsonl"
    path.write_bytes(content)
    if isinstance(expected, int):
        assert len(load_questions(str(path))) == expected
    else:
        with pytest.raises(DatasetError) as error:
            load_questions(str(path))
        assert expected in str(error.value)
        assert str(path) in str(error.value)


def test_generic_path_that_is_a_directory_or_missing(tmp_path):
    (tmp_path / "folder.jsonl").mkdir()
    with pytest.raises(DatasetError, match="folder.jsonl is a directory, not a file"):
        load_questions(str(tmp_path / "folder.jsonl"))
    with pytest.raises(DatasetError, match="absent.jsonl not found"):
        load_questions(str(tmp_path / "absent.jsonl"))


def test_unknown_name_and_bad_limits_are_usage_errors():
    with pytest.raises(ConfigError, match="unknown dataset 'imagenet'"):
        load_questions("imagenet")
    for limit in (0, -1, True):
        with pytest.raises(ConfigError, match=r"limit \(--limit\): must be ≥ 1"):
            load_questions("pubmedqa", limit=limit)


def test_a_record_without_answer_is_unlabelled_and_valid_ones_keep_their_gold(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_bytes(line(**MC) + line(**MC, id="b", answer="green") + line(question="N?", answer=7))
    unlabelled, by_text, number = load_questions(str(path))
    assert unlabelled.gold is None
    assert (by_text.gold, by_text.task_type) == ("green", TaskType.MULTIPLE_CHOICE)
    assert (number.gold, number.task_type) == ("7", TaskType.SHORT_ANSWER)


def test_images_inside_the_folder_or_image_dir_are_accepted(tmp_path):
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "cat.jpg").write_bytes(b"jpeg")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "dog.png").write_bytes(b"png")
    path = tmp_path / "mine.jsonl"
    path.write_bytes(line(question="What?", image="pics/cat.jpg")
                     + line(question="Which?", image="dog.png")
                     + line(question="Abs?", image=str(tmp_path / "pics" / "cat.jpg")))
    with pytest.raises(DatasetError, match=r"mine.jsonl:2: image 'dog.png' not found"):
        load_questions(str(path))
    cat, dog, absolute = load_questions(str(path), image_dir=elsewhere)
    assert cat.image_path == str((tmp_path / "pics" / "cat.jpg").resolve())
    assert dog.image_path == str((elsewhere / "dog.png").resolve())
    assert absolute.image_path == cat.image_path


def test_symlinks_escaping_the_folder_are_refused(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("password")
    folder = tmp_path / "data"
    folder.mkdir()
    os.symlink(outside, folder / "innocent.jpg")
    os.symlink(folder / "loop.jpg", folder / "loop.jpg")
    path = folder / "mine.jsonl"
    path.write_bytes(line(question="What?", image="innocent.jpg"))
    with pytest.raises(DatasetError, match=r"mine.jsonl:1: image 'innocent.jpg' resolves outside"):
        load_questions(str(path))
    path.write_bytes(line(question="What?", image="loop.jpg"))
    with pytest.raises(DatasetError, match=r"mine.jsonl:1: image 'loop.jpg'"):
        load_questions(str(path))


def test_gqa_image_ids_cannot_leave_the_image_dir(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    (tmp_path / "passwd.jpg").write_bytes(b"secret")
    os.symlink(tmp_path / "passwd.jpg", images / "n1.jpg")
    row = {"question_id": "1", "question": "What?", "answer": "cat"}
    with pytest.raises(DatasetError, match="resolves outside"):
        gqa_question({**row, "image_id": "../passwd"}, images)
    with pytest.raises(DatasetError, match="resolves outside"):
        gqa_question({**row, "image_id": "n1"}, images)


PUBMED_ROW = {"pmid": 1, "question": "Does it work?", "contexts": ["Some text."],
              "final_decision": "yes"}

# (case id, pqal.jsonl bytes, expected error text or number of questions) — read through HF datasets
BUILT_IN_CASES: list[tuple[str, bytes, str | int]] = [
    ("valid", line(**PUBMED_ROW) + line(**{**PUBMED_ROW, "pmid": 2}), 2),
    ("json-array-line", line(**PUBMED_ROW) + b"[1, 2]\n", "pqal.jsonl:2: a JSON array"),
    ("byte-0xff", line(**PUBMED_ROW) + b'{"pmid": 2, "question": "\xff"}\n', "pqal.jsonl:2: not UTF-8"),
    ("truncated", line(**PUBMED_ROW) + b'{"pmid": 2, "quest', "pqal.jsonl:2: not valid JSON"),
    ("empty-file", b"", "pqal.jsonl is empty"),
    ("gold-not-yes-no-maybe", line(**{**PUBMED_ROW, "final_decision": "perhaps"}),
     "row 1 is malformed (DatasetError: answer 'perhaps' is not yes, no or maybe)"),
    ("duplicate-pmid", line(**PUBMED_ROW) + line(**PUBMED_ROW), "rows 1 and 2 have the same id"),
    ("question-null", line(**{**PUBMED_ROW, "question": None}), "row 1 is malformed"),
    ("question-number", line(**{**PUBMED_ROW, "question": 5}), "row 1 is malformed"),
    ("contexts-missing", line(pmid=1, question="Q?", final_decision="yes"), "row 1 is malformed"),
]


@pytest.mark.parametrize(("content", "expected"), [c[1:] for c in BUILT_IN_CASES],
                         ids=[c[0] for c in BUILT_IN_CASES])
def test_damaged_built_in_files(tmp_path, content, expected):
    (tmp_path / "pubmedqa").mkdir()
    path = tmp_path / "pubmedqa" / "pqal.jsonl"
    path.write_bytes(content)
    if isinstance(expected, int):
        assert len(load_questions("pubmedqa", data_dir=tmp_path)) == expected
    else:
        with pytest.raises(DatasetError) as error:
            load_questions("pubmedqa", data_dir=tmp_path)
        assert expected in str(error.value) and str(path) in str(error.value)


def test_built_in_file_that_is_a_directory(tmp_path):
    (tmp_path / "medqa" / "test_4options.jsonl").mkdir(parents=True)
    with pytest.raises(DatasetError, match="test_4options.jsonl is a directory"):
        load_questions("medqa", data_dir=tmp_path)


def test_the_real_datasets_pass_every_check(data_dir):
    """The shared datasets (the committed fixtures when absent) load whole: unique ids, golds fit."""
    if "fixtures" in str(data_dir):
        pytest.skip("../shared/datasets is not beside this checkout")
    sizes = {name: len(load_questions(name, data_dir=data_dir))
             for name in ("pubmedqa", "gqa", "medqa", "gsm8k")}
    assert sizes == {"pubmedqa": 1000, "gqa": 2796, "medqa": 1273, "gsm8k": 1319}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = ("id", "question", "answer", "choices", "task_type", "context", "image", "dataset")
RECORDS = st.dictionaries(st.sampled_from(FIELDS),
                          JSON_VALUES | st.sampled_from(list(TaskType)).map(lambda t: t.value)
                          | st.lists(st.text(max_size=6), max_size=5), max_size=8)
LINES = st.one_of(
    RECORDS.map(lambda r: json.dumps(r).encode()),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=60).filter(lambda b: b"\n" not in b),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINES, max_size=6))
def test_property_random_generic_lines_give_questions_or_a_dataset_error(tmp_path, lines):
    path = tmp_path / "random.jsonl"
    path.write_bytes(b"\n".join(lines))
    try:
        questions = load_questions(str(path))
    except DatasetError as error:
        assert str(path) in str(error)
        return
    assert all(q.text.strip() and isinstance(q.gold, (str, type(None))) for q in questions)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.dictionaries(st.sampled_from(sorted({*PUBMED_ROW, "context", "pubid",
                                                               "question_id", "image_id", "types"})),
                                     JSON_VALUES | st.text(max_size=10)), max_size=4))
def test_property_random_built_in_rows_give_questions_or_a_dataset_error(rows):
    for convert in (pubmedqa_question, lambda row: gqa_question(row, None)):
        try:
            questions = rows_to_questions(rows, convert, "random.jsonl")
        except DatasetError as error:
            assert "random.jsonl: row" in str(error)
            continue
        assert len(questions) == len(rows)
        assert len({q.id for q in questions}) == len(questions)


def test_case_counts():
    """The closing note reports these numbers; they only grow."""
    assert len(GENERIC_CASES) >= 40 and len(BUILT_IN_CASES) >= 10
