"""The generic JSON-lines question format, for bringing your own question sets.

One JSON object per line:
    {"id": "q1", "question": "…", "answer": "B",
     "choices": ["…", "…"],            # optional: multiple choice, lettered A, B, …
     "task_type": "multiple_choice",    # optional: multiple_choice | yes_no_maybe | numeric |
                                        #   short_answer (default: multiple_choice when
                                        #   choices are given, else short_answer)
     "context": "…",                    # optional, e.g. a passage
     "image": "path/to/image.jpg"}      # optional, relative to the file's folder
`answer` may be the option letter or the option's text for multiple choice. Lines that are
blank are skipped; a malformed line is an error naming the file and line number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from imad.errors import DatasetError
from imad.question import Question, TaskType, infer_task_type


def generic_question(row: dict[str, Any], source: Path, line: int) -> Question:
    choices = tuple(str(c) for c in row.get("choices") or ())
    task_type = TaskType(row["task_type"]) if row.get("task_type") else infer_task_type(choices)
    image = row.get("image")
    return Question(
        text=str(row["question"]), task_type=task_type, choices=choices,
        context=str(row.get("context") or ""), id=str(row.get("id") or f"{source.stem}-{line}"),
        dataset=str(row.get("dataset") or source.stem),
        gold=None if row.get("answer") is None else str(row["answer"]),
        image_path=str(source.parent / image) if image else None,
    )


def load_generic_jsonl(path: Path, limit: int | None = None) -> list[Question]:
    """Questions from a generic JSONL file (format in the module docstring)."""
    if not path.is_file():
        raise DatasetError(f"question file {path} not found")
    questions = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if limit is not None and len(questions) >= limit:
                break
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise TypeError("line is not a JSON object")
                questions.append(generic_question(row, path, line_number))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
                raise DatasetError(f"{path}:{line_number}: {type(error).__name__}: {error}") from error
    return questions
