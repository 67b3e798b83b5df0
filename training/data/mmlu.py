"""MMLU test questions (14,042, 57 subjects, four options) for zero-shot evaluation.

Read from `mmlu/test.jsonl` (`{id, subject, question, choices[4], answer (letter)}`). The file
is sorted by subject, so `limit` takes a seeded sample stratified by subject
(`training.data.sampling`), never the first N (which would all be abstract algebra).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imad.question import Question, TaskType
from training.data.hf_loading import load_json_rows, rows_to_questions
from training.data.sampling import take_sample

LOCAL_FILE = "mmlu/test.jsonl"


def mmlu_question(row: dict[str, Any]) -> Question:
    return Question(text=row["question"], task_type=TaskType.MULTIPLE_CHOICE,
                    choices=tuple(str(c) for c in row["choices"]), id=f"mmlu-{row['id']}",
                    dataset="mmlu", gold=str(row["answer"]), metadata={"subject": row["subject"]})


def load_mmlu(data_dir: Path, limit: int | None = None) -> list[Question]:
    from training.data.location import dataset_file

    path = dataset_file(data_dir, LOCAL_FILE)
    questions = rows_to_questions(load_json_rows(path), mmlu_question, str(path))
    return take_sample(questions, limit, stratum=lambda q: q.metadata["subject"])
