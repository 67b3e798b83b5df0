"""The on-disk corpus of self-critique responses (SPEC §6): append-only JSONL that resumes.

One file per (model, dataset); one JSON object per line (`CorpusRecord`). Each record is
written with a single `write` of one line, flushed and fsync'ed before the next question starts,
so a crash or SIGKILL loses at most the in-flight record. On reading, a final line cut off by a
crash is ignored (and reported); any other malformed line is a `DatasetError` naming file and
line, because silently dropping it would lose data.

A question whose call failed at the LLM (server down, timeout: status `llm_error`) is retried by
the next run, which appends a new record; readers see only the latest record of each question.
Parse failures and truncations are answers, not outages, and are kept as they are.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from imad.errors import DatasetError
from training.data.json_lines import iter_json_objects

CORPUS_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class CorpusRecord:
    """One question answered by one model with one prompt version, and its label.

    `label` is 1 when the kept single-agent answer (`final_answer`) is correct, 0 when wrong, and
    None when the response could not be parsed (`parse_error` says why); such records are kept
    so the parse-failure rate is measurable, and the trainer skips them.
    """

    question_id: str
    dataset: str
    question: dict[str, Any]
    prompt_version: str
    model_id: str
    decoding: dict[str, Any]
    confidence_source: str
    raw_response: str
    parsed: dict[str, Any] | None
    parse_error: str | None
    gold: str | None
    label: int | None
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    latency_s: float
    mode: str = "text"
    schema: int = CORPUS_SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        text = json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate in a model's text: \u-escape it all, so
            text = json.dumps(asdict(self), sort_keys=True)  # the line stays valid UTF-8
        return text

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CorpusRecord:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def append_record(path: Path, record: CorpusRecord) -> None:
    """Append one record durably (one write, flush, fsync)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = record.to_json() + "\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def iter_records(path: Path) -> Iterator[CorpusRecord]:
    """Every complete record in `path`, in file order. A torn final line is skipped.

    A malformed line stops the reading with a `DatasetError` naming file and line; the file is
    not changed, so fixing or deleting that one line recovers every other record.
    """
    if not path.exists():
        raise DatasetError(f"corpus file {path} does not exist; build it with python -m training.corpus")
    try:
        for number, data in iter_json_objects(path, allow_torn_tail=True):
            yield _record(data, f"{path}:{number}")
    except DatasetError as error:
        raise DatasetError(f"{error} — reading stopped there and the file is unchanged: fix or "
                           "delete that line and rerun") from error


def _record(data: dict[str, Any], where: str) -> CorpusRecord:
    if data.get("schema") != CORPUS_SCHEMA_VERSION:
        raise DatasetError(f"{where}: corpus schema {data.get('schema')!r}, this imad reads "
                           f"{CORPUS_SCHEMA_VERSION}")
    if not isinstance(data.get("question_id"), str) or data.get("label") not in (0, 1, None) \
            or isinstance(data.get("label"), bool):
        raise DatasetError(f"{where}: question_id must be text and label 0, 1 or null, got "
                           f"{data.get('question_id')!r} and {data.get('label')!r}")
    try:
        return CorpusRecord.from_dict(data)
    except TypeError as error:  # a required field is missing
        raise DatasetError(f"{where}: not a corpus record ({error})") from error


def read_records(path: Path) -> list[CorpusRecord]:
    """The latest record of each question, in the order questions first appear in `path`."""
    latest: dict[str, CorpusRecord] = {}
    for record in iter_records(path):
        latest[record.question_id] = record  # a retry replaces the failed call, in place
    return list(latest.values())


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
