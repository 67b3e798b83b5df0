"""Labelled validation answers for `imad calibrate`, read from corpus files at run time.

A corpus file is JSON lines, one self-critique answer per line, as `python -m training.corpus`
writes them: `question_id`, `question.text`, the `parsed` response (null when unparsed), its
`label` (1 correct, 0 wrong, null unparsed) and the call's `prompt_tokens` and
`completion_tokens`. A resumed corpus can hold a question twice; the later line counts. A last
line cut off by a crash is skipped; any other malformed line is a `DatasetError` naming file and
line. Reading needs no training code: the router scores the parsed answers' features directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from imad.errors import DatasetError
from imad.jsonio import DEFAULT_MAX_LINES_BYTES, UntrustedJSONError, loads_untrusted, read_regular_file
from imad.router.router import Router
from imad.router.threshold import ValidationSet


def read_validation_set(router: Router, paths: Sequence[str | Path]) -> ValidationSet:
    """The router's scores on the labelled answers of `paths` (files, or folders of *.jsonl)."""
    from imad.critique.schema import CritiqueResponse
    from imad.router import featurize

    files = corpus_jsonl_files(paths)
    records = [record for file in files for record in _latest_records(file)]
    labelled = [r for r in records if r.get("label") is not None and r.get("parsed") is not None]
    if not labelled:
        raise DatasetError(f"no labelled records in {', '.join(map(str, files))} (all "
                           f"{len(records)} are parse failures or the files are empty)")
    questions = [str(r["question"]["text"]) for r in labelled]
    responses = [CritiqueResponse.from_dict(r["parsed"]) for r in labelled]
    matrix = np.asarray(featurize.extract_batch(questions, responses, router.feature_schema_version),
                        dtype=np.float64)
    unparsed = len(records) - len(labelled)
    source = {"kind": "corpus files", "files": [str(path) for path in paths],
              "labelled": len(labelled), "unparsed": unparsed}
    tokens = [r.get("prompt_tokens", 0) + r.get("completion_tokens", 0) for r in records]
    return ValidationSet(router.predict_proba(matrix), np.array([int(r["label"]) for r in labelled]),
                         unparsed, source, float(np.mean(tokens)))


@dataclass(frozen=True)
class AnswerScores:
    """The router's raw (uncalibrated) scores of every parsed answer in some corpus files."""

    raw: np.ndarray
    labels: list[int | None]
    """1 right, 0 wrong, None unlabelled (a label-free calibrator can still use it)."""
    unparsed: int
    files: list[str]


def read_answer_scores(router: Router, paths: Sequence[str | Path]) -> AnswerScores:
    """The network's raw scores of the parsed answers of `paths`, with their labels if any:
    what `imad calibrate --recalibrate` fits a calibrator on."""
    from imad.critique.schema import CritiqueResponse
    from imad.router import featurize

    files = corpus_jsonl_files(paths)
    records = [record for file in files for record in _latest_records(file)]
    parsed = [r for r in records if r.get("parsed") is not None]
    if not parsed:
        raise DatasetError(f"no parsed answers in {', '.join(map(str, files))} ({len(records)} "
                           "records, all parse failures, or the files are empty)")
    labels = [r.get("label") for r in parsed]
    bad = next((label for label in labels if label is not None and label not in (0, 1)
                or isinstance(label, float)), None)
    if bad is not None:
        raise DatasetError(f"a corpus label must be 0, 1 or null, got {bad!r}")
    questions = [str(r["question"]["text"]) for r in parsed]
    try:
        responses = [CritiqueResponse.from_dict(r["parsed"]) for r in parsed]
    except (KeyError, TypeError, ValueError) as error:
        raise DatasetError(f"a corpus record's `parsed` answer is not a self-critique ({error})") from None
    matrix = np.asarray(featurize.extract_batch(questions, responses, router.feature_schema_version),
                        dtype=np.float64)
    return AnswerScores(router.predict_raw(matrix), [None if v is None else int(v) for v in labels],
                        len(records) - len(parsed), [str(file) for file in files])


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


def _latest_records(path: Path) -> list[dict[str, Any]]:
    try:
        lines = read_regular_file(path, max_bytes=DEFAULT_MAX_LINES_BYTES).decode("utf-8").split("\n")
    except UntrustedJSONError as error:
        raise DatasetError(f"{path}: {error}") from error
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start})") from error
    latest: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = loads_untrusted(line)
        except UntrustedJSONError as error:
            if number == len(lines):  # no trailing newline: the write was cut off by a crash
                continue
            raise DatasetError(f"{path}:{number}: malformed corpus line ({error})") from error
        question = record.get("question") if isinstance(record, dict) else None
        if not isinstance(question, dict) or not isinstance(question.get("text"), str) \
                or "question_id" not in record:
            raise DatasetError(f"{path}:{number}: not a corpus record (an object with question_id "
                               "and question.text)")
        latest[str(record["question_id"])] = record
    return list(latest.values())
