"""Reading corpus files: the one reader of self-critique answers on disk.

A corpus file is JSON lines, one `CorpusRecord` per line, as `python -m training.corpus` appends
them (`training.corpus_store` writes; this module reads). Training (`training.fit`, `.evaluate`,
`.calibrate`) and the runtime (`imad calibrate --corpus`, `--recalibrate`) read through these
functions, so a file means the same thing to both and a damaged one fails the same way: a final
line cut off by a crash is skipped; any other malformed line is a `DatasetError` naming file and
line, and the file is never changed. A resumed corpus can hold a question twice (an LLM failure
retried); the later line counts. It lives in `imad` because the runtime must not import
`training`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from imad.errors import DatasetError
from imad.json_lines import iter_json_objects

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

    @property
    def text(self) -> str:
        """The question's text."""
        return str(self.question["text"])

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens of the self-critique call."""
        return self.prompt_tokens + self.completion_tokens


def corpus_jsonl_files(paths: Sequence[str | Path], *, search_root: Path | None = None,
                       missing_hint: str = "") -> list[Path]:
    """The JSONL files named by `paths` (a directory expands to its sorted *.jsonl files), each
    once. A relative path missing from the working directory is looked up under `search_root`
    when given (training finds the shipped corpus from anywhere inside the checkout)."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if search_root is not None and not path.exists() and not path.is_absolute() \
                and (search_root / path).exists():
            path = search_root / path
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise DatasetError(f"corpus directory {path} holds no .jsonl files")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise DatasetError(f"corpus path {given} does not exist{missing_hint}")
    if not files:
        raise DatasetError("no corpus files given (--corpus PATH)")
    unique: dict[Path, Path] = {}
    for file in files:
        unique.setdefault(file.resolve(), file)
    return list(unique.values())


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


def read_records(path: Path) -> list[CorpusRecord]:
    """The latest record of each question, in the order questions first appear in `path`."""
    latest: dict[str, CorpusRecord] = {}
    for record in iter_records(path):
        latest[record.question_id] = record  # a retry replaces the failed call, in place
    return list(latest.values())


def read_corpus(paths: Sequence[str | Path]) -> list[CorpusRecord]:
    """The latest record of each question of every file `paths` names, file by file."""
    return [record for file in corpus_jsonl_files(paths) for record in read_records(file)]


def _record(data: dict[str, Any], where: str) -> CorpusRecord:
    if data.get("schema") != CORPUS_SCHEMA_VERSION:
        raise DatasetError(f"{where}: corpus schema {data.get('schema')!r}, this imad reads "
                           f"{CORPUS_SCHEMA_VERSION}")
    label = data.get("label")
    if not isinstance(data.get("question_id"), str) or label not in (0, 1, None) \
            or isinstance(label, (bool, float)):
        raise DatasetError(f"{where}: question_id must be text and label 0, 1 or null, got "
                           f"{data.get('question_id')!r} and {label!r}")
    question, parsed = data.get("question"), data.get("parsed")
    if not isinstance(question, dict) or not isinstance(question.get("text"), str):
        raise DatasetError(f"{where}: not a corpus record (question must be an object with a "
                           f"text, got {_show(question)})")
    if parsed is not None and not isinstance(parsed, dict):
        raise DatasetError(f"{where}: not a corpus record (parsed must be an object or null, got "
                           f"{_show(parsed)})")
    for key in ("prompt_tokens", "completion_tokens"):
        count = data.get(key)
        if key in data and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
            raise DatasetError(f"{where}: not a corpus record ({key} must be a count, got "
                               f"{_show(count)})")
    try:
        return CorpusRecord.from_dict(data)
    except TypeError as error:  # a required field is missing
        raise DatasetError(f"{where}: not a corpus record ({error})") from error


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
