"""Read local JSON-lines files through Hugging Face `datasets`, offline.

`datasets` gives memory-mapped Arrow tables, `num_proc` and caching for free; the rows are
turned into `Question`s by each dataset's own row function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from imad.errors import DatasetError
from imad.question import Question
from training.data.location import set_offline


def load_json_rows(path: Path, field: str | None = None) -> Iterable[dict[str, Any]]:
    """Rows of a local JSONL (or `field`-keyed JSON) file, via `datasets.load_dataset`."""
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
    """Convert rows, naming the file and row number when one is malformed."""
    questions = []
    for number, row in enumerate(rows):
        if limit is not None and len(questions) >= limit:
            break
        try:
            questions.append(to_question(row))
        except (KeyError, TypeError, ValueError) as error:
            raise DatasetError(f"{source}: row {number + 1} is malformed ({type(error).__name__}: "
                               f"{error})") from error
    return questions
