"""MMLU-Pro test questions (12,032, 14 categories, up to ten options A–J) for zero-shot evaluation.

Read from `mmlu_pro/test.jsonl` (`{question_id, question, options[], answer (letter),
category, …}`); 83% of the questions have ten options, the rest three to nine. `limit` takes a
seeded sample stratified by category (`training.data.sampling`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imad.question import Question, TaskType
from training.data.hf_loading import load_json_rows, rows_to_questions
from training.data.sampling import take_sample

LOCAL_FILE = "mmlu_pro/test.jsonl"


def mmlu_pro_question(row: dict[str, Any]) -> Question:
    return Question(text=row["question"], task_type=TaskType.MULTIPLE_CHOICE,
                    choices=tuple(str(o) for o in row["options"]),
                    id=f"mmlu_pro-{row['question_id']}", dataset="mmlu_pro",
                    gold=str(row["answer"]),
                    metadata={"category": row["category"], "src": row.get("src", "")})


def load_mmlu_pro(data_dir: Path, limit: int | None = None) -> list[Question]:
    from training.data.location import dataset_file

    path = dataset_file(data_dir, LOCAL_FILE)
    questions = rows_to_questions(load_json_rows(path), mmlu_pro_question, str(path))
    return take_sample(questions, limit, stratum=lambda q: q.metadata["category"])
