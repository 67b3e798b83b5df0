"""Writing the on-disk corpus of self-critique responses: append-only JSONL that resumes.

One file per (model, dataset); one JSON object per line (`imad.corpus_records.CorpusRecord`,
read by `imad.corpus_records`, the one reader training and the runtime share). Each record is
written with a single `write` of one line, flushed and fsync'ed before the next question starts,
so a crash or SIGKILL loses at most the in-flight record; `repair_torn_tail` cuts what it left.

A question whose call failed at the LLM (server down, timeout: status `llm_error`) is retried by
the next run, which appends a new record; readers see only the latest record of each question.
Parse failures and truncations are answers, not outages, and are kept as they are.
"""

from __future__ import annotations

import os
from pathlib import Path

from imad.corpus_records import CorpusRecord, read_records


def append_record(path: Path, record: CorpusRecord) -> None:
    """Append one record durably (one write, flush, fsync)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = record.to_json() + "\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def is_llm_failure(record: CorpusRecord) -> bool:
    """The call itself failed (no answer came back), so the question is worth asking again."""
    return (record.parse_error or "").startswith("llm_error")


def completed_ids(path: Path) -> set[str]:
    """Question ids already answered (a resumed run skips them; LLM failures are retried)."""
    if not path.exists():
        return set()
    return {r.question_id for r in read_records(path) if not is_llm_failure(r)}


def repair_torn_tail(path: Path) -> bool:
    """Cut a final partial line left by a crash so the next append starts on a fresh line."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return False
    path.write_bytes(data[: data.rfind(b"\n") + 1])
    return True
