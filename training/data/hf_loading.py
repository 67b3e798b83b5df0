"""Read local JSON-lines files through Hugging Face `datasets`, offline.

`datasets` gives memory-mapped Arrow tables, `num_proc` and caching for free; the rows are
turned into `Question`s by each dataset's own row function, then validated
(`training.data.validation`: the gold answer fits, ids are unique). A JSON-lines file is first
read line by line (`imad.json_lines`), so a bad line is named by file and line:
`datasets` itself says only "an error occurred while generating the dataset", or lets an
invalid byte through to fail later, while the rows are read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from imad.errors import DatasetError
from imad.json_lines import check_is_file, iter_json_objects
from imad.question import Question
from training.data.location import set_offline
from training.data.validation import UniqueIds, validate_question


def load_json_rows(path: Path, field: str | None = None) -> Iterable[dict[str, Any]]:
    """Rows of a local JSONL (or `field`-keyed JSON) file, via `datasets.load_dataset`."""
    check_is_file(path, "dataset file")
    if path.stat().st_size == 0:
        raise DatasetError(f"dataset file {path} is empty")
    if field is None:
        for _ in iter_json_objects(path):  # raises DatasetError at the first bad line
            pass
    set_offline()
    from datasets import load_dataset

    try:
        kwargs = {"field": field} if field else {}
        return load_dataset("json", data_files={"rows": str(path)}, split="rows", **kwargs)
    except Exception as error:  # datasets raises many types for a bad file; name the file
        raise DatasetError(f"could not read {path} with datasets: {type(error).__name__}: {error}") \
            from error


def rows_to_questions(rows: Iterable[dict[str, Any]], to_question: Callable[[dict[str, Any]], Question],
                      source: str, limit: int | None = None) -> list[Question]:
    """Convert and validate rows, naming the file and row number when one is malformed."""
    questions = []
    ids = UniqueIds("row")
    for number, row in enumerate(rows, start=1):
        if limit is not None and len(questions) >= limit:
            break
        try:
            question = to_question(row)
            validate_question(question)
            ids.add(question.id, number)
        # AttributeError too: a field of the wrong JSON type (a number where text belongs)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise DatasetError(f"{source}: row {number} is malformed ({type(error).__name__}: "
                               f"{error})") from error
        questions.append(question)
    return questions
