"""Self-critique answers for evaluation, built or reused through the corpus cache.

The answers to dataset D by model M live in `<corpus_dir>/<model-slug>/eval/<D>.jsonl`, the
same resumable, append-only format as the training corpus (`training.corpus_store`), kept in
an `eval/` sub-folder so `python -m training.fit` never trains on them. Questions already in
the file are not asked again, so a rerun, a larger `--limit` (whose sample contains the
smaller one) or an interrupted run costs only the missing answers.

A cached record is only reused if it answers the same question (text and gold answer) with
the same model, prompt version and decoding (`training.corpus.check_same_setup`); otherwise the
run stops with a `DatasetError` that names the file, rather than scoring stale answers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from imad.corpus_records import CorpusRecord, read_records
from imad.critique.call import SelfCritique
from imad.errors import DatasetError
from imad.question import Question
from training.corpus import build_corpus, model_slug
from training.corpus_store import completed_ids

EVAL_FOLDER = "eval"


@dataclass(frozen=True)
class DatasetResponses:
    """One dataset's questions and their corpus records, in question order."""

    name: str
    questions: tuple[Question, ...]
    records: tuple[CorpusRecord, ...]
    corpus_path: Path
    reused: int
    """Answers that were already in the cache."""
    generated: int
    """Answers asked for in this run."""


def eval_corpus_path(corpus_dir: str | Path, model_id: str, name: str) -> Path:
    """Where the evaluation answers of `model_id` to dataset `name` are cached."""
    return Path(corpus_dir) / model_slug(model_id) / EVAL_FOLDER / f"{name}.jsonl"


def check_questions(name: str, questions: Sequence[Question]) -> None:
    """An evaluation needs questions, each with a gold answer and a unique id."""
    if not questions:
        raise DatasetError(f"dataset {name!r} has no questions; check the file or the --limit")
    missing = [q.id for q in questions if q.gold is None or not str(q.gold).strip()]
    if missing:
        raise DatasetError(f"dataset {name!r}: {len(missing)} question(s) have no gold answer "
                           f"(e.g. {missing[:3]}); evaluation needs an 'answer' on every line")
    duplicates = sorted(qid for qid, count in Counter(q.id for q in questions).items() if count > 1)
    if duplicates:
        raise DatasetError(f"dataset {name!r}: duplicate question ids {duplicates[:5]}; the cache "
                           "keys answers by id, so ids must be unique")


def collect_responses(name: str, questions: Sequence[Question], critique: SelfCritique,
                      corpus_dir: str | Path, *, workers: int = 1,
                      progress: bool = True) -> DatasetResponses:
    """Answer the questions missing from the cache, then return every question's record."""
    check_questions(name, questions)
    path = eval_corpus_path(corpus_dir, critique.model.model_id, name)
    cached = completed_ids(path)
    wanted = {q.id for q in questions}
    build_corpus(questions, critique, path, workers=workers, progress=progress)
    by_id: dict[str, CorpusRecord] = {}
    for record in read_records(path):
        if record.question_id in wanted:
            by_id.setdefault(record.question_id, record)
    records = []
    for question in questions:
        record = by_id.get(question.id)
        if record is None:  # build_corpus writes every question; only a concurrent edit gets here
            raise DatasetError(f"{path} has no answer for {question.id!r} after the run")
        _check_record(record, question, path)
        records.append(record)
    reused = len(wanted & cached)
    return DatasetResponses(name, tuple(questions), tuple(records), path, reused,
                            len(questions) - reused)


def _check_record(record: CorpusRecord, question: Question, path: Path) -> None:
    problems = []
    if str(record.question.get("text")) != question.text:
        problems.append("another question text")
    if record.gold != question.gold:
        problems.append(f"gold {record.gold!r} instead of {question.gold!r}")
    if problems:
        raise DatasetError(f"{path}: the cached answer to {question.id!r} does not fit this run "
                           f"({'; '.join(problems)}); delete the file or pass another --corpus-dir")
