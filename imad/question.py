"""The question record every part of imad passes around.

A `Question` is what the router, the debate back-ends and the dataset loaders share: the text,
optional context (e.g. a PubMedQA abstract), the answer options, the task type that decides how
answers are canonicalised, and the gold answer when it is known.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from imad.errors import InvalidQuestionError
from imad.text import first_lone_surrogate

MAX_QUESTION_CHARS = 20_000
"""Longest question accepted, counting everything sent: the text, the context and the choices;
longer would overflow small models' contexts."""


class TaskType(str, Enum):
    """How an answer is written and compared."""

    MULTIPLE_CHOICE = "multiple_choice"  # an option letter: A, B, C…
    YES_NO_MAYBE = "yes_no_maybe"  # PubMedQA
    NUMERIC = "numeric"  # GSM8K
    SHORT_ANSWER = "short_answer"  # GQA: a few normalised words


@dataclass(frozen=True)
class Question:
    """One question. `choices` are option texts, lettered A, B, C… in order."""

    text: str
    task_type: TaskType = TaskType.SHORT_ANSWER
    choices: tuple[str, ...] = ()
    context: str = ""
    id: str = ""
    dataset: str = ""
    gold: str | None = None
    image_path: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "task_type", TaskType(self.task_type))
        except ValueError:
            raise InvalidQuestionError(f"unknown task type {self.task_type!r}; use one of "
                                       f"{[t.value for t in TaskType]}") from None
        object.__setattr__(self, "choices", tuple(self.choices))
        if not isinstance(self.text, str) or not isinstance(self.context, str):
            raise InvalidQuestionError("the question text and context must be strings")
        if not self.text or not self.text.strip():
            raise InvalidQuestionError("the question text is empty")
        if not all(isinstance(c, str) for c in self.choices):
            raise InvalidQuestionError("every choice must be a string")
        size = question_chars(self.text, self.context, self.choices)
        if size > MAX_QUESTION_CHARS:
            raise InvalidQuestionError(
                f"the question with its context and choices is {size:,} characters; the limit "
                f"is {MAX_QUESTION_CHARS:,} — shorten the context or summarise it first"
            )
        if self.choices and self.task_type in (TaskType.NUMERIC, TaskType.YES_NO_MAYBE):
            raise InvalidQuestionError(
                f"a {self.task_type.value} question takes no choices (its answers are "
                f"{'numbers' if self.task_type is TaskType.NUMERIC else 'yes, no or maybe'}); "
                "drop the choices or use multiple_choice")
        if self.task_type is TaskType.MULTIPLE_CHOICE:
            if len(self.choices) < 2:
                raise InvalidQuestionError("a multiple-choice question needs at least 2 choices")
            if len(self.choices) > 26:
                raise InvalidQuestionError(f"at most 26 choices (A–Z), got {len(self.choices)}")
            if any(not str(c).strip() for c in self.choices):
                raise InvalidQuestionError("a choice is empty")
        self._refuse_invalid_text()

    def _refuse_invalid_text(self) -> None:
        """Refuse lone surrogates rather than clean them: they mean the caller decoded its input
        wrongly (a JSON escape, non-UTF-8 bytes), and a cleaned question would not be the one
        asked. Left in, they crash the first encoder downstream (HTTP, cache key, spaCy)."""
        named = [("text", self.text), ("context", self.context)]
        named += [(f"choice {index + 1}", str(choice)) for index, choice in enumerate(self.choices)]
        for name, value in named:
            position = first_lone_surrogate(value)
            if position is not None:
                raise InvalidQuestionError(
                    f"the question's {name} is not valid Unicode text: a lone surrogate "
                    f"U+{ord(value[position]):04X} at character {position} (was the input decoded "
                    "from something other than UTF-8?)")

    @property
    def option_letters(self) -> tuple[str, ...]:
        """The answer labels a multiple-choice answer may take."""
        return tuple(chr(ord("A") + i) for i in range(len(self.choices)))

    @property
    def answer_options(self) -> tuple[str, ...]:
        """The closed set of canonical answers, or () when the answer is open."""
        if self.task_type is TaskType.MULTIPLE_CHOICE:
            return self.option_letters
        if self.task_type is TaskType.YES_NO_MAYBE:
            return ("yes", "no", "maybe")
        return ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["task_type"] = self.task_type.value
        data["choices"] = list(self.choices)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Question:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        known["choices"] = tuple(known.get("choices") or ())
        return cls(**known)


def question_chars(text: str, context: str, choices: tuple[str, ...] | list[str]) -> int:
    """Characters a question sends to the model: its text, its context and every choice."""
    return len(text) + len(context) + sum(len(choice) for choice in choices)


def refuse_repeated_choices(choices: tuple[str, ...] | list[str]) -> None:
    """InvalidQuestionError when a choice repeats an earlier one (surrounding space ignored).

    Checked where a user's question enters (`imad ask`/`debate`, `imad serve`), not in
    `Question` itself: published benchmarks (MMLU, BBH) hold a few such rows, and evaluation
    must read them as they are."""
    seen: set[str] = set()
    for choice in choices:
        if choice.strip() in seen:
            raise InvalidQuestionError(f"the choice {choice!r} is given twice; each option must "
                                       "differ, or its letter would not say which one is meant")
        seen.add(choice.strip())


def infer_task_type(choices: tuple[str, ...] | list[str]) -> TaskType:
    """Choices → multiple choice; none → short answer (callers choose numeric/yes-no explicitly)."""
    return TaskType.MULTIPLE_CHOICE if choices else TaskType.SHORT_ANSWER
