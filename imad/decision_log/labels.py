"""Outcome labels: which logged decisions were right.

A label says whether the answer served for a completion id was correct, where that came from
(`user`, `judge` or `gold`) and, optionally, whether the debate's answer was (`debate_correct`,
what lets the report say whether a shadow debate fixed or broke an answer). Labelling an id
again replaces its label and counts the change, so a judge can overrule a user and the report
still sees how often labels moved.

A bulk label file (`imad log label`) is JSON lines, one `{"id", "correct", "source"?,
"debate_correct"?}` per line, applied all or nothing: every line is checked first (JSON, keys,
types, duplicates, ids present in the log) and any problem refuses the whole file with a report
naming each bad line, so a half-imported file never skews a report (a line naming a key twice
is one of them: which of its two values was meant?). Its `source` defaults to
`gold`: a file is usually a reviewed sample, not a user's click.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imad.decision_log.columns import ID
from imad.decision_log.schema import LABEL_SOURCES
from imad.decision_log.store import LogStore, read_error
from imad.errors import ConfigError, DatasetError, LabelFileError, UnknownDecisionError
from imad.json_lines import decode_json_object, json_type, read_lines_file
from imad.text import first_lone_surrogate

LABEL_FILE_MAX_BYTES = 256 * 1024 * 1024
"""Largest label file read (≈ 3 million labels); split a bigger one."""
LABEL_KEYS = ("id", "correct", "source", "debate_correct")
MAX_ID_CHARS = 256
FILE_SOURCE = "gold"
_ID_CHUNK = 500


@dataclass(frozen=True)
class Label:
    """One outcome: the decision `id`, whether its served answer was `correct`, and from whom."""

    id: str
    correct: bool
    source: str = "user"
    debate_correct: bool | None = None

    def __post_init__(self) -> None:
        """`ConfigError` naming the field a caller got wrong: `correct=2` was stored as 2 and
        `source="boss"` as a source the report does not know."""
        if not isinstance(self.id, str) or not self.id.strip() or len(self.id) > MAX_ID_CHARS \
                or first_lone_surrogate(self.id) is not None:
            raise ConfigError("id", f"must be a completion id (1 to {MAX_ID_CHARS} characters of "
                              f"Unicode text), got {self.id!r}"[:160])
        for name in ("correct", "debate_correct"):
            value = getattr(self, name)
            if not isinstance(value, bool) and not (name == "debate_correct" and value is None):
                raise ConfigError(name, f"must be True or False, got {value!r}"[:120])
        if self.source not in LABEL_SOURCES:
            raise ConfigError("source", f"must be one of {', '.join(LABEL_SOURCES)}, got "
                              f"{self.source!r}"[:120])


@dataclass(frozen=True)
class LabelImport:
    """What a bulk import wrote: labels added and labels that replaced an earlier one."""

    added: int
    replaced: int


def set_label(store: LogStore, label: Label, *, now: float | None = None) -> int:
    """Store one label (replacing an earlier one); its change count. `UnknownDecisionError` when
    the log holds no decision with that id (the feedback endpoint's 404); a locked, damaged or
    read-only file is a `DecisionLogError`."""
    with _typed_errors(store), store.transaction() as connection:
        if connection.execute(f"SELECT 1 FROM decisions WHERE {ID} = ?", (label.id,)).fetchone() is None:
            raise UnknownDecisionError(label.id)
        _upsert(connection, [label], time.time() if now is None else now)
        return int(connection.execute("SELECT changes FROM labels WHERE id = ?",
                                      (label.id,)).fetchone()[0])


def import_label_file(store: LogStore, path: str | Path, *,
                      max_bytes: int = LABEL_FILE_MAX_BYTES) -> LabelImport:
    """Check every line of a label file — its format and whether the log holds its id, all bad
    lines in one report — then write all its labels in one transaction."""
    numbered, problems = read_label_file(path, max_bytes=max_bytes)
    with _typed_errors(store), store.transaction() as connection:
        known = _known_ids(connection, [label.id for _, label in numbered])
        problems += [(line, f"no decision with id {label.id!r} in the log")
                     for line, label in numbered if label.id not in known]
        if problems:
            raise LabelFileError(str(path), sorted(problems))
        if not numbered:
            raise LabelFileError(str(path), [(1, "the file holds no labels")])
        labelled = _known_ids(connection, [label.id for _, label in numbered], table="labels")
        _upsert(connection, [label for _, label in numbered], time.time())
    replaced = sum(1 for _, label in numbered if label.id in labelled)
    return LabelImport(added=len(numbered) - replaced, replaced=replaced)


def read_label_file(path: str | Path, *, max_bytes: int = LABEL_FILE_MAX_BYTES
                    ) -> tuple[list[tuple[int, Label]], list[tuple[int, str]]]:
    """`(line number, label)` for every good line, and `(line number, what is wrong)` for every
    bad one (the caller adds the ids the log lacks, and reports all of them at once)."""
    path = Path(path)
    if path.is_dir():
        raise DatasetError(f"label file {path} is a directory, not a file")
    if not path.exists():
        raise DatasetError(f"label file {path} not found")
    data = read_lines_file(path, what="label file", max_bytes=max_bytes)
    labels: list[tuple[int, Label]] = []
    problems: list[tuple[int, str]] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            label = parse_label(decode_json_object(raw, unique_keys=True), default_source=FILE_SOURCE)
        except DatasetError as error:
            problems.append((number, str(error)))
            continue
        if label.id in first_line:
            problems.append((number, f"id {label.id!r} is labelled again (first on line "
                                     f"{first_line[label.id]}); keep one line per id"))
            continue
        first_line[label.id] = number
        labels.append((number, label))
    return labels, problems


def parse_label(value: dict[str, Any], *, default_source: str = "user") -> Label:
    """A label from one JSON object; `DatasetError` naming the bad key otherwise (the feedback
    endpoint's 400 uses the same rules)."""
    unknown = sorted(set(value) - set(LABEL_KEYS))
    if unknown:
        raise DatasetError(f"unknown key(s) {', '.join(map(repr, unknown))}; a label holds "
                           f"{', '.join(LABEL_KEYS)}")
    decision_id = value.get("id")
    if not isinstance(decision_id, str) or not decision_id.strip():
        raise DatasetError(f"id must be a non-empty string (the completion's id), not "
                           f"{_shown(value, 'id')}")
    if len(decision_id) > MAX_ID_CHARS:
        raise DatasetError(f"id is {len(decision_id)} characters, over the limit of {MAX_ID_CHARS}")
    surrogate = first_lone_surrogate(decision_id)
    if surrogate is not None:  # SQLite cannot store it: "this is a bug in imad" before
        raise DatasetError(f"id holds a lone surrogate U+{ord(decision_id[surrogate]):04X} at "
                           f"character {surrogate + 1} (not valid Unicode text)")
    correct = value.get("correct")
    if not isinstance(correct, bool):
        raise DatasetError(f"correct must be true or false, not {_shown(value, 'correct')}")
    debate_correct = value.get("debate_correct")
    if debate_correct is not None and not isinstance(debate_correct, bool):
        raise DatasetError(f"debate_correct must be true, false or absent, not "
                           f"{_shown(value, 'debate_correct')}")
    source = value.get("source", default_source)
    if source not in LABEL_SOURCES:
        raise DatasetError(f"source must be one of {', '.join(LABEL_SOURCES)}, not "
                           f"{_shown(value, 'source')}")
    return Label(decision_id, correct, source, debate_correct)


def _shown(value: dict[str, Any], key: str) -> str:
    """How a wrong value reads in an error: "missing", "the string 'yes'", "the number 1"."""
    if key not in value:
        return "missing"
    found = value[key]
    if isinstance(found, (str, int, float)) and not isinstance(found, bool):
        return f"the {json_type(found)} {repr(found)[:60]}"
    return f"a JSON {json_type(found)}" if found is not None else "null"


@contextmanager
def _typed_errors(store: LogStore) -> Iterator[None]:
    """SQLite's errors while labelling as the typed error the CLI and the endpoint report."""
    try:
        yield
    except sqlite3.Error as error:
        raise read_error(store.path, error) from error


def _known_ids(connection, ids: Sequence[str], table: str = "decisions") -> set[str]:
    column = ID if table == "decisions" else "id"
    known: set[str] = set()
    for start in range(0, len(ids), _ID_CHUNK):
        chunk = ids[start:start + _ID_CHUNK]
        marks = ", ".join("?" for _ in chunk)
        known.update(row[0] for row in connection.execute(
            f"SELECT {column} FROM {table} WHERE {column} IN ({marks})", chunk))
    return known


def _upsert(connection, labels: Iterable[Label], now: float) -> None:
    connection.executemany(
        "INSERT INTO labels (id, correct, debate_correct, source, time, changes) "
        "VALUES (?, ?, ?, ?, ?, 0) ON CONFLICT(id) DO UPDATE SET correct = excluded.correct, "
        "debate_correct = excluded.debate_correct, source = excluded.source, "
        "time = excluded.time, changes = labels.changes + 1",
        [(label.id, int(label.correct), None if label.debate_correct is None
          else int(label.debate_correct), label.source, now) for label in labels])
