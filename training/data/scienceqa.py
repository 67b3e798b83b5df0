"""ScienceQA test questions (4,241, two to five options) for zero-shot evaluation.

Read from `scienceqa/test.jsonl` (`{id, question_and_context, options[], answer (letter),
has_image, caption}`). The images are not available: for the 2,017 questions that have one,
the official machine caption (ViT-GPT2, one sentence, often vague) is given as the question's
context, "Image (machine caption): …", and `metadata["mode"]` is "caption"; text-only
questions have mode "text". `limit` takes a seeded sample stratified by that mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imad.question import Question, TaskType
from training.data.hf_loading import load_json_rows, rows_to_questions
from training.data.sampling import take_sample

LOCAL_FILE = "scienceqa/test.jsonl"
CAPTION_PREFIX = "Image (machine caption): "


def scienceqa_question(row: dict[str, Any]) -> Question:
    has_image = bool(row.get("has_image"))
    caption = str(row.get("caption") or "").strip()
    return Question(
        text=row["question_and_context"], task_type=TaskType.MULTIPLE_CHOICE,
        choices=tuple(str(o) for o in row["options"]), id=f"scienceqa-{row['id']}",
        dataset="scienceqa", gold=str(row["answer"]),
        context=f"{CAPTION_PREFIX}{caption}" if has_image and caption else "",
        metadata={"mode": "caption" if has_image else "text"},
    )


def load_scienceqa(data_dir: Path, limit: int | None = None) -> list[Question]:
    from training.data.location import dataset_file

    path = dataset_file(data_dir, LOCAL_FILE)
    questions = rows_to_questions(load_json_rows(path), scienceqa_question, str(path))
    return take_sample(questions, limit, stratum=lambda q: q.metadata["mode"])
