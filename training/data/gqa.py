"""GQA testdev-balanced questions, text-only unless an image folder is given.

Images and scene graphs are not available offline, so by default the model sees only the question
("blind" GQA), and every question records `metadata["mode"] = "text-only"`. With `image_dir`,
each question carries `<image_dir>/<image_id>.jpg` (or .png) and is sent to the model as an image
part (`mode = "image"`); a missing image file is an error, never a silent text-only fallback.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from imad.errors import DatasetError
from imad.question import Question, TaskType
from training.data.hf_loading import load_json_rows, rows_to_questions
from training.data.images import contained_image

LOCAL_FILE = "gqa/gqa_ood_testdev_all.jsonl"
HUB_NAME, HUB_CONFIG = "lmms-lab/GQA", "testdev_balanced_instructions"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


def _image_path(image_dir: Path, image_id: str) -> str:
    """`<image_dir>/<image_id>.jpg` (or .jpeg, .png), which must resolve inside `image_dir`."""
    return str(contained_image([f"{image_id}{suffix}" for suffix in IMAGE_SUFFIXES], [image_dir]))


YES_NO_STRUCTURES = ("verify", "logical")
"""GQA's structural types whose answer is always yes or no ("Is the cup white?")."""


def gqa_question(row: dict[str, Any], image_dir: Path | None = None) -> Question:
    """One local or hub row → Question.

    GQA annotates each question's structure; verify and logical questions (20% of testdev) are
    yes/no, so they get the closed yes/no/maybe answer set (their gold is always yes or no), and
    the rest stay open short answers ("couch").
    """
    image_id = str(row.get("image_id", row.get("imageId")))
    question_id = str(row.get("question_id", row.get("id")))
    image = _image_path(image_dir, image_id) if image_dir else None
    structure = (row.get("types") or {}).get("structural", "")
    task_type = TaskType.YES_NO_MAYBE if structure in YES_NO_STRUCTURES else TaskType.SHORT_ANSWER
    return Question(
        text=row["question"], task_type=task_type, id=f"gqa-{question_id}",
        dataset="gqa", gold=row["answer"], image_path=image,
        metadata={"mode": "image" if image else "text-only", "image_id": image_id,
                  "structural_type": structure},
    )


def load_gqa(data_dir: Path, limit: int | None = None, image_dir: Path | None = None) -> list[Question]:
    path = data_dir / LOCAL_FILE
    if image_dir is not None and not Path(image_dir).is_dir():
        raise DatasetError(f"GQA image folder {image_dir} does not exist")

    def convert(row: dict[str, Any]) -> Question:
        return gqa_question(row, Path(image_dir) if image_dir else None)

    if not path.is_file() and os.environ.get("HF_DATASETS_OFFLINE") == "0":
        from datasets import load_dataset

        return rows_to_questions(load_dataset(HUB_NAME, HUB_CONFIG, split="testdev"), convert,
                                 HUB_NAME, limit)
    if not path.is_file():
        raise DatasetError(f"{path} not found (and HF_DATASETS_OFFLINE is not 0, so the hub "
                           f"copy {HUB_NAME} is not tried)")
    return rows_to_questions(load_json_rows(path), convert, str(path), limit)
