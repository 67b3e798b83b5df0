"""Checks every loaded question passes, whichever loader made it (issue 14, item 9).

A dataset is validated, not silently accepted: a gold answer that names none of the choices
would become label 0 for every response, and two questions with one id would make the corpus
keep one answer and drop the other. Each check raises `DatasetError` without a location; the
loaders add `file:line` (or `file: row N`).
"""

from __future__ import annotations

from imad.critique.canonical import canonicalise
from imad.errors import DatasetError
from imad.question import Question, TaskType

_EXPECTED_GOLD = {
    TaskType.MULTIPLE_CHOICE: "an option letter or one of the choices' texts",
    TaskType.YES_NO_MAYBE: "yes, no or maybe",
    TaskType.NUMERIC: "a number",
    TaskType.SHORT_ANSWER: "a non-empty short answer",
}


def validate_question(question: Question) -> None:
    """The gold answer fits the task type and every text is valid Unicode."""
    for name, text in (("question", question.text), ("context", question.context),
                       *((f"choice {i + 1}", c) for i, c in enumerate(question.choices)),
                       ("answer", question.gold or "")):
        check_encodable(text, name)
    if question.gold is not None and not canonicalise(question.gold, question.task_type,
                                                      question.choices):
        raise DatasetError(f"answer {question.gold!r} is not {_EXPECTED_GOLD[question.task_type]}"
                           + (f" (choices: {list(question.choices)})" if question.choices else ""))


def check_encodable(text: str, name: str) -> None:
    """A lone surrogate (`"\\ud800"` in JSON) is not Unicode text: no file or model can take it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise DatasetError(f"{name} holds a lone surrogate {text[error.start]!r} at position "
                           f"{error.start}, which is not valid Unicode") from error


class UniqueIds:
    """Remembers where each question id was seen; a second sighting is a `DatasetError`."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.seen: dict[str, int] = {}

    def add(self, question_id: str, position: int) -> None:
        first = self.seen.setdefault(question_id, position)
        if first != position:
            raise DatasetError(f"{self.unit}s {first} and {position} have the same id "
                               f"{question_id!r}; ids must be unique (the corpus keeps one answer "
                               "per id)")
