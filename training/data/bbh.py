"""BIG-Bench Hard (BBH) for zero-shot evaluation: 25 of its 27 tasks, one answer format each.

Each `bbh/<task>.json` holds `{"examples": [{input, target}]}`. How each task is asked and
scored (`TASK_FORMATS`):

- "lettered" (18 tasks): the input ends with an `Options:` block of `(A) …` lines. The block is
  cut from the question text and its options become the question's choices (the prompt lists
  them again as `A) …`); the gold answer is the target's letter. Task type: multiple choice.
- "two_way" (6 tasks: boolean_expressions, causal_judgement, formal_fallacies, navigate,
  sports_understanding, web_of_lies): the answer is one of two words (Yes/No, True/False,
  valid/invalid). They are asked as multiple choice between those two words, in the order the
  input lists them (`- Yes`, `- No`) or else the order in `TWO_WAY_CHOICES`, so a model cannot
  answer "maybe" and the answer is compared by option, not by free text.
- "numeric" (object_counting, multistep_arithmetic_two): task type numeric.

Left out (`EXCLUDED_TASKS`), because no answer could be scored fairly with imad's answer
formats: dyck_languages (the answers are bracket sequences such as "] ) >", which short-answer
normalisation strips to nothing) and word_sorting (150 of 250 answers are longer than the
80 characters the response schema allows a short answer).

Four broken upstream examples are skipped: three whose options were split at commas, so the
target names no option (movie_recommendation "Monsters, Inc", ruin_names "dearth, wind, &
fire" and "rita, sue and bob poo"), and one whose input is cut off after option (A)
(snarks #89). That leaves 6,007 questions. `limit` takes a seeded sample
stratified by task (`training.data.sampling`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from imad.errors import DatasetError
from imad.jsonio import DEFAULT_MAX_LINES_BYTES, UntrustedJSONError, read_untrusted_file
from imad.question import Question, TaskType
from training.data.sampling import take_sample

LOCAL_DIR = "bbh"
TASK_FORMATS: dict[str, str] = {
    "boolean_expressions": "two_way",
    "causal_judgement": "two_way",
    "date_understanding": "lettered",
    "disambiguation_qa": "lettered",
    "formal_fallacies": "two_way",
    "geometric_shapes": "lettered",
    "hyperbaton": "lettered",
    "logical_deduction_five_objects": "lettered",
    "logical_deduction_seven_objects": "lettered",
    "logical_deduction_three_objects": "lettered",
    "movie_recommendation": "lettered",
    "multistep_arithmetic_two": "numeric",
    "navigate": "two_way",
    "object_counting": "numeric",
    "penguins_in_a_table": "lettered",
    "reasoning_about_colored_objects": "lettered",
    "ruin_names": "lettered",
    "salient_translation_error_detection": "lettered",
    "snarks": "lettered",
    "sports_understanding": "two_way",
    "temporal_sequences": "lettered",
    "tracking_shuffled_objects_five_objects": "lettered",
    "tracking_shuffled_objects_seven_objects": "lettered",
    "tracking_shuffled_objects_three_objects": "lettered",
    "web_of_lies": "two_way",
}
EXCLUDED_TASKS: dict[str, str] = {
    "dyck_languages": "bracket-sequence answers normalise to the empty string",
    "word_sorting": "most answers exceed the 80-character short-answer limit of the schema",
}
TWO_WAY_CHOICES: dict[str, tuple[str, str]] = {
    "boolean_expressions": ("True", "False"),
    "causal_judgement": ("Yes", "No"),
    "formal_fallacies": ("valid", "invalid"),
    "navigate": ("Yes", "No"),
    "sports_understanding": ("yes", "no"),
    "web_of_lies": ("Yes", "No"),
}

_OPTIONS_BLOCK = re.compile(r"\n\s*Options:\s*\n(?P<block>.*)\Z", re.S)
_LETTERED = re.compile(r"^\(([A-Z])\)\s*(.*?)\s*$")
_DASHED = re.compile(r"^-\s*(.*?)\s*$")
_LETTER_TARGET = re.compile(r"^\(([A-Z])\)$")


class SkipExample(ValueError):
    """An upstream example that cannot be asked (its target names no option)."""


def split_options(text: str) -> tuple[str, list[str]]:
    """(question text without the `Options:` block, the option lines), or (text, [])."""
    match = _OPTIONS_BLOCK.search(text)
    if not match:
        return text.strip(), []
    lines = [line.strip() for line in match.group("block").splitlines() if line.strip()]
    return text[: match.start()].strip(), lines


def bbh_question(task: str, index: int, row: dict[str, Any]) -> Question:
    """One BBH example → Question, in the format `TASK_FORMATS[task]` names."""
    kind = TASK_FORMATS[task]
    target = str(row["target"]).strip()
    common = {"id": f"bbh-{task}-{index}", "dataset": "bbh", "metadata": {"task": task}}
    if kind == "numeric":
        return Question(text=row["input"].strip(), task_type=TaskType.NUMERIC, gold=target, **common)
    text, lines = split_options(row["input"])
    if kind == "lettered":
        parsed = [_LETTERED.match(line) for line in lines]
        if not parsed or not all(parsed):
            raise ValueError(f"expected (A)-style options in the input, found {lines[:3]}")
        if len(parsed) < 2:
            raise SkipExample(f"only {len(parsed)} option (the input is cut off)")
        letters = [m.group(1) for m in parsed]
        if letters != [chr(ord("A") + i) for i in range(len(letters))]:
            raise ValueError(f"options are not lettered A, B, C… in order: {letters}")
        letter = _LETTER_TARGET.match(target)
        if letter is None:
            raise SkipExample(f"target {target!r} names no option")
        return Question(text=text, task_type=TaskType.MULTIPLE_CHOICE,
                        choices=tuple(m.group(2) for m in parsed), gold=letter.group(1), **common)
    dashed = [_DASHED.match(line) for line in lines]
    choices = [m.group(1) for m in dashed if m] or list(TWO_WAY_CHOICES[task])
    folded = [c.casefold() for c in choices]
    if target.casefold() not in folded:
        raise ValueError(f"target {target!r} is none of {choices}")
    gold = chr(ord("A") + folded.index(target.casefold()))
    return Question(text=text, task_type=TaskType.MULTIPLE_CHOICE, choices=tuple(choices),
                    gold=gold, **common)


def load_bbh(data_dir: Path, limit: int | None = None) -> list[Question]:
    """Every task file of `TASK_FORMATS` found in `<data_dir>/bbh/` (at least one must be)."""
    folder = data_dir / LOCAL_DIR
    files = [folder / f"{task}.json" for task in sorted(TASK_FORMATS)]
    present = [file for file in files if file.is_file()]
    if not present:
        raise DatasetError(f"no BBH task files (e.g. {files[0].name}) in {folder}; is {data_dir} "
                           "the shared datasets folder?")
    questions: list[Question] = []
    for file in present:
        for index, row in enumerate(_examples(file)):
            try:
                questions.append(bbh_question(file.stem, index, row))
            except SkipExample:
                continue
            except (KeyError, TypeError, ValueError) as error:
                raise DatasetError(f"{file}: example {index + 1} is malformed "
                                   f"({type(error).__name__}: {error})") from error
    return take_sample(questions, limit, stratum=lambda q: q.metadata["task"])


def _examples(path: Path) -> list[dict[str, Any]]:
    """The `examples` list of one task file (small files: the standard library reads them)."""
    try:
        examples = read_untrusted_file(path, max_bytes=DEFAULT_MAX_LINES_BYTES)["examples"]
    except (OSError, UntrustedJSONError, KeyError, TypeError) as error:
        raise DatasetError(f"{path} is not a BBH task file with an 'examples' list "
                           f"({type(error).__name__}: {error})") from error
    if not isinstance(examples, list):
        raise DatasetError(f"{path}: 'examples' is not a list")
    return examples
