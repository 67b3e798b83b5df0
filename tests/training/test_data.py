"""Dataset loaders on the committed fixtures (same layout as ../shared/datasets)."""

from __future__ import annotations

import json

import pytest

from imad.errors import ConfigError, DatasetError
from imad.question import TaskType
from training.data import load_questions, resolve_data_dir


def test_pubmedqa(fixture_data_dir):
    questions = load_questions("pubmedqa", data_dir=fixture_data_dir)
    assert len(questions) == 20
    first = questions[0]
    assert first.id == "pubmedqa-21645374" and first.task_type is TaskType.YES_NO_MAYBE
    assert first.gold in ("yes", "no", "maybe")
    assert first.context.startswith("Programmed cell death (PCD)")


def test_gqa_is_text_only_without_images(fixture_data_dir):
    questions = load_questions("gqa", data_dir=fixture_data_dir, limit=5)
    assert len(questions) == 5
    assert questions[0].text.startswith("What is the name of the piece of furniture")
    assert questions[0].gold == "couch"
    assert {q.metadata["mode"] for q in questions} == {"text-only"}
    assert all(q.image_path is None for q in questions)


def test_gqa_yes_no_structures_get_the_closed_answer_set(fixture_data_dir):
    questions = load_questions("gqa", data_dir=fixture_data_dir)
    by_structure = {}
    for question in questions:
        by_structure.setdefault(question.metadata["structural_type"], set()).add(question.task_type)
    assert by_structure["logical"] == {TaskType.YES_NO_MAYBE}
    assert by_structure["query"] == {TaskType.SHORT_ANSWER}
    assert all(q.gold in ("yes", "no") for q in questions if q.task_type is TaskType.YES_NO_MAYBE)


def test_gqa_with_an_image_folder(fixture_data_dir, tmp_path):
    (tmp_path / "n54424.jpg").write_bytes(b"jpeg")
    questions = load_questions("gqa", data_dir=fixture_data_dir, limit=2, image_dir=tmp_path)
    assert questions[0].image_path == str(tmp_path / "n54424.jpg")
    assert questions[0].metadata["mode"] == "image"
    with pytest.raises(DatasetError, match="not found"):
        load_questions("gqa", data_dir=fixture_data_dir, image_dir=tmp_path)  # later ids missing


def test_medqa(fixture_data_dir):
    question = load_questions("medqa", data_dir=fixture_data_dir, limit=1)[0]
    assert question.task_type is TaskType.MULTIPLE_CHOICE and len(question.choices) == 4
    assert question.gold == "B"


def test_generic_jsonl(tmp_path):
    path = tmp_path / "mine.jsonl"
    rows = [{"id": "a", "question": "2+2?", "answer": "4", "task_type": "numeric"},
            {"question": "Pick", "choices": ["x", "y"], "answer": "y"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    first, second = load_questions(str(path))
    assert (first.id, first.task_type, first.gold) == ("a", TaskType.NUMERIC, "4")
    assert (second.id, second.task_type, second.dataset) == ("mine-2", TaskType.MULTIPLE_CHOICE, "mine")


@pytest.mark.parametrize(("content", "message"), [
    ('{"question": "ok", "answer": "1"}\nnot json\n', "mine.jsonl:2"),
    ('{"answer": "1"}\n', "'question' is missing"),
    ('{"question": "", "answer": "1"}\n', "empty"),
    ('[1, 2]\n', "mine.jsonl:1: a JSON array where a JSON object"),
])
def test_generic_jsonl_errors_name_the_line(tmp_path, content, message):
    path = tmp_path / "mine.jsonl"
    path.write_text(content)
    with pytest.raises(DatasetError, match=message):
        load_questions(str(path))


def test_unknown_names_and_missing_dirs(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="unknown dataset"):
        load_questions("imagenet")
    with pytest.raises(DatasetError, match="does not exist"):
        resolve_data_dir(tmp_path / "nowhere")
    monkeypatch.setenv("IMAD_DATA_DIR", str(tmp_path))
    assert resolve_data_dir() == tmp_path
    with pytest.raises(DatasetError, match="not found"):
        load_questions("medqa")


def test_real_shared_datasets(data_dir):
    """Against ../shared/datasets when present: full PubMedQA PQA-L and GQA testdev."""
    if data_dir.name != "datasets" or "fixtures" in str(data_dir):
        pytest.skip("../shared/datasets is not beside this checkout")
    assert len(load_questions("pubmedqa", data_dir=data_dir)) == 1000
    assert len(load_questions("gqa", data_dir=data_dir)) == 2796
