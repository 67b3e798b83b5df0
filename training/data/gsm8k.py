"""GSM8K test questions (1,319 grade-school maths word problems) for zero-shot evaluation.

Each line of `gsm8k/test.jsonl` is `{question, answer}`, where `answer` is a worked solution
ending in `#### N`; the gold answer is that final number with thousands separators removed
("#### 1,600" → "1600"). Task type: numeric. The file has no ids, so a question's id is its
0-based line number (`gsm8k-0`…). `limit` takes a seeded random sample (one stratum).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imad.question import Question, TaskType
from training.data.hf_loading import load_json_rows, rows_to_questions
from training.data.sampling import take_sample

LOCAL_FILE = "gsm8k/test.jsonl"
GOLD_MARKER = "####"


def gsm8k_gold(solution: str) -> str:
    """The number after the final `####` of a GSM8K solution."""
    if GOLD_MARKER not in solution:
        raise ValueError(f"the answer has no {GOLD_MARKER!r} line")
    gold = solution.rsplit(GOLD_MARKER, 1)[1].strip().replace(",", "")
    if not gold:
        raise ValueError(f"nothing follows {GOLD_MARKER!r}")
    return gold


def load_gsm8k(data_dir: Path, limit: int | None = None) -> list[Question]:
    from training.data.location import dataset_file

    path = dataset_file(data_dir, LOCAL_FILE)
    rows = load_json_rows(path)
    numbered = ({**row, "_line": number} for number, row in enumerate(rows))
    questions = rows_to_questions(numbered, _question, str(path))
    return take_sample(questions, limit, stratum=lambda q: "all")


def _question(row: dict[str, Any]) -> Question:
    return Question(text=row["question"], task_type=TaskType.NUMERIC, id=f"gsm8k-{row['_line']}",
                    dataset="gsm8k", gold=gsm8k_gold(row["answer"]),
                    metadata={"solution": row["answer"]})
