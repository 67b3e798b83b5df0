"""The generic JSON-lines question format, for bringing your own question sets.

One JSON object per line:
    {"id": "q1", "question": "…", "answer": "B",
     "choices": ["…", "…"],            # optional: multiple choice, lettered A, B, …
     "task_type": "multiple_choice",    # optional: multiple_choice | yes_no_maybe | numeric |
                                        #   short_answer (default: multiple_choice when
                                        #   choices are given, else short_answer)
     "context": "…",                    # optional, e.g. a passage
     "image": "path/to/image.jpg"}      # optional, inside the file's folder or --image-dir
`answer` may be the option letter or the option's text for multiple choice; it must name one of
the choices (yes/no/maybe, a number for the other closed types). A record without `answer` is
unlabelled: it is answered, and its corpus record has label None. Ids must be unique. Blank
lines are skipped; anything malformed — a line that is not a JSON object, a field of the wrong
type, an image outside the allowed folders — is a `DatasetError` naming the file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imad.errors import DatasetError
from imad.json_lines import check_is_file, iter_json_objects, json_type
from imad.question import Question, TaskType, infer_task_type
from training.data.images import contained_image
from training.data.validation import UniqueIds, validate_question

TASK_TYPES = tuple(t.value for t in TaskType)


def generic_question(row: dict[str, Any], source: Path, line: int,
                     image_dir: Path | None = None) -> Question:
    """One record → Question; a field of the wrong type is a `DatasetError` naming the field."""
    choices = tuple(_strings(row, "choices"))
    task_type_name = _optional(row, "task_type", str)
    if task_type_name is not None and task_type_name not in TASK_TYPES:
        raise DatasetError(f"task_type {task_type_name!r} is not one of {list(TASK_TYPES)}")
    task_type = TaskType(task_type_name) if task_type_name else infer_task_type(choices)
    text = _optional(row, "question", str)
    if text is None:
        raise DatasetError("the field 'question' is missing or null; every record needs its text")
    answer = _optional(row, "answer", (str, int, float))
    question_id = _optional(row, "id", (str, int))
    image = _optional(row, "image", str)
    roots = [image_dir, source.parent] if image_dir else [source.parent]
    return Question(
        text=text, task_type=task_type, choices=choices,
        context=_optional(row, "context", str) or "",
        id=str(question_id) if question_id not in (None, "") else f"{source.stem}-{line}",
        dataset=_optional(row, "dataset", str) or source.stem,
        gold=None if answer is None else str(answer),
        image_path=str(contained_image([image], roots)) if image else None,
    )


_EXPECTED = {str: "a string", list: "an array", (str, int): "a string or an integer",
             (str, int, float): "a string or a number"}


def _optional(row: dict[str, Any], name: str, kinds: type | tuple[type, ...]) -> Any:
    """`row[name]`, None when absent or null; a value of another JSON type is a `DatasetError`."""
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise DatasetError(f"the field {name!r} must be {_EXPECTED[kinds]}, got {json_type(value)} "
                           f"{_preview(value)}")
    return value


def _strings(row: dict[str, Any], name: str) -> list[str]:
    value = _optional(row, name, list) or []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise DatasetError(f"the field {name!r} must be an array of strings; item {index + 1} "
                               f"is {json_type(item)} {_preview(item)}")
    return value


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def load_generic_jsonl(path: Path, limit: int | None = None,
                       image_dir: Path | None = None) -> list[Question]:
    """Questions from a generic JSONL file (format in the module docstring)."""
    check_is_file(path, "question file")
    questions: list[Question] = []
    ids = UniqueIds("line")
    for line_number, row in iter_json_objects(path):
        if limit is not None and len(questions) >= limit:
            break
        try:
            question = generic_question(row, path, line_number, image_dir)
            validate_question(question)
            ids.add(question.id, line_number)
        except ValueError as error:  # DatasetError, or Question's own checks (empty text…)
            raise DatasetError(f"{path}:{line_number}: {error}") from error
        questions.append(question)
    return questions
