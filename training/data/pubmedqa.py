"""PubMedQA PQA-L: 1,000 expert-labelled yes/no/maybe questions with their abstracts.

The abstract's section texts are joined as the question's context; the gold answer is
`final_decision`. Locally from `pubmedqa/pqal.jsonl`; online, from the hub dataset
`qiaojin/PubMedQA` (config `pqa_labeled`) when no local file is found and the network is allowed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from imad.question import Question, TaskType
from training.data.hf_loading import load_json_rows, rows_to_questions

LOCAL_FILE = "pubmedqa/pqal.jsonl"
HUB_NAME, HUB_CONFIG = "qiaojin/PubMedQA", "pqa_labeled"


def pubmedqa_question(row: dict[str, Any]) -> Question:
    """One local (`pqal.jsonl`) or hub row → Question."""
    contexts = row["contexts"] if "contexts" in row else row["context"]["contexts"]
    pmid = str(row.get("pmid", row.get("pubid")))
    return Question(
        text=row["question"], task_type=TaskType.YES_NO_MAYBE, context=" ".join(contexts),
        id=f"pubmedqa-{pmid}", dataset="pubmedqa", gold=row["final_decision"],
        metadata={"split": row.get("split", "")},
    )


def load_pubmedqa(data_dir: Path, limit: int | None = None) -> list[Question]:
    path = data_dir / LOCAL_FILE
    if not path.is_file() and os.environ.get("HF_DATASETS_OFFLINE") == "0":
        from datasets import load_dataset

        rows = load_dataset(HUB_NAME, HUB_CONFIG, split="train")
        return rows_to_questions(rows, pubmedqa_question, HUB_NAME, limit)
    if not path.is_file():
        from imad.errors import DatasetError

        raise DatasetError(f"{path} not found (and HF_DATASETS_OFFLINE is not 0, so the hub "
                           f"copy {HUB_NAME} is not tried)")
    return rows_to_questions(load_json_rows(path), pubmedqa_question, str(path), limit)
