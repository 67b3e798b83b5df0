"""MedQA (USMLE) test questions with four options, for zero-shot evaluation and debate tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imad.question import Question, TaskType
from training.data.hf_loading import load_json_rows, rows_to_questions

LOCAL_FILE = "medqa/test_4options.jsonl"


def medqa_question(row: dict[str, Any]) -> Question:
    letters = sorted(row["options"])
    return Question(text=row["question"], task_type=TaskType.MULTIPLE_CHOICE,
                    choices=tuple(row["options"][k] for k in letters), id=str(row["id"]),
                    dataset="medqa", gold=row["answer_idx"])


def load_medqa(data_dir: Path, limit: int | None = None) -> list[Question]:
    from training.data.location import dataset_file

    path = dataset_file(data_dir, LOCAL_FILE)
    return rows_to_questions(load_json_rows(path), medqa_question, str(path), limit)
