"""Labelled validation answers for `imad calibrate`, read from corpus files at run time.

The files are read by `imad.corpus_records`, the one corpus reader training uses too: each
answer's question text, its `parsed` response (null when unparsed), its `label` (1 correct,
0 wrong, null unparsed) and the call's tokens; the later line of a question counts, a damaged
line is a `DatasetError` naming file and line. Reading needs no training code: the router scores
the parsed answers' features directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from imad.corpus_records import CorpusRecord, corpus_jsonl_files, read_corpus
from imad.errors import DatasetError
from imad.router.router import Router
from imad.router.threshold import ValidationSet
from imad.text import first_lone_surrogate

if TYPE_CHECKING:
    from imad.decision_log.replica import Replica
    from imad.decision_log.scorer import Scorer

__all__ = ["AnswerScores", "Traffic", "answer_scores_from_log", "check_one_network",
           "corpus_jsonl_files", "read_answer_scores", "read_validation_set", "traffic_from_log",
           "validation_set_from_log"]


def read_validation_set(router: Router, paths: Sequence[str | Path]) -> ValidationSet:
    """The router's scores on the labelled answers of `paths` (files, or folders of *.jsonl)."""
    records = read_corpus(paths)
    labelled = [r for r in records if r.label is not None and r.parsed is not None]
    if not labelled:
        raise DatasetError(f"no labelled records in {', '.join(map(str, corpus_jsonl_files(paths)))} "
                           f"(all {len(records)} are parse failures or the files are empty)")
    matrix = _features(router, labelled)
    unparsed = len(records) - len(labelled)
    source = {"kind": "corpus files", "files": [str(path) for path in paths],
              "labelled": len(labelled), "unparsed": unparsed}
    labels = np.array([int(r.label) for r in labelled if r.label is not None])
    return ValidationSet(router.predict_proba(matrix), labels, unparsed, source,
                         float(np.mean([r.tokens for r in records])))


@dataclass(frozen=True)
class AnswerScores:
    """The router's raw (uncalibrated) scores of every parsed answer in some corpus files."""

    raw: np.ndarray
    labels: list[int | None]
    """1 right, 0 wrong, None unlabelled (a label-free calibrator can still use it)."""
    unparsed: int
    files: list[str]
    traffic: Traffic | None = None
    """The answers a new version is measured on (None: these answers, as corpus answers)."""

    def measured_on(self) -> Traffic:
        """The traffic a new version made from these answers is measured on."""
        if self.traffic is not None:
            return self.traffic
        labels = np.array([np.nan if label is None else float(label) for label in self.labels])
        return Traffic(self.raw, labels, self.unparsed, "corpus answers")


def read_answer_scores(router: Router, paths: Sequence[str | Path]) -> AnswerScores:
    """The network's raw scores of the parsed answers of `paths`, with their labels if any:
    what `imad calibrate --recalibrate` fits a calibrator on."""
    files = corpus_jsonl_files(paths)
    records = read_corpus(files)
    parsed = [r for r in records if r.parsed is not None]
    if not parsed:
        raise DatasetError(f"no parsed answers in {', '.join(map(str, files))} ({len(records)} "
                           "records, all parse failures, or the files are empty)")
    matrix = _features(router, parsed)
    return AnswerScores(router.predict_raw(matrix), [r.label for r in parsed],
                        len(records) - len(parsed), [str(file) for file in files])


@dataclass(frozen=True)
class Traffic:
    """The raw scores of the answers a new version would meet (decisions of a log, or the
    answers of corpus files), with their labels (NaN: none) and how many were never scored
    (they always escalate)."""

    raw: np.ndarray
    labels: np.ndarray
    unscored: int
    kind: str
    """What the answers are, in words ("logged decisions", "corpus answers")."""

    @property
    def questions(self) -> int:
        return self.raw.size + self.unscored


def traffic_from_log(router: Router, log: str | Path, *, since: float | None = None,
                     replica: Replica | None = None) -> Traffic:
    """Every decision a log holds from this router's network (`imad.decision_log.scorer`: by the
    weights' SHA-256; whatever τ, calibrator or name the logging router had): the raw score of
    the scored ones, and the unscored ones counted. Rows of another network are a
    `DatasetError` naming them; no scored row is one too. `replica`: only the rows one replica
    wrote (`imad.decision_log.replica`)."""
    from imad.decision_log.columns import RAW
    from imad.decision_log.location import open_for_reading
    from imad.decision_log.replica import REPLICA_COLUMNS, of_replica
    from imad.decision_log.scorer import SCORER_COLUMNS, scorer_of

    store = open_for_reading(log)
    log = str(store.path)  # a URL's password hidden
    try:
        rows = list(of_replica(store.rows(since=since, names=("p", RAW, *SCORER_COLUMNS, *REPLICA_COLUMNS)),
                               replica))
    finally:
        store.close()
    check_one_network({scorer_of(row) for row in rows}, router, log, "decisions")
    scored = [row for row in rows if row["p"] is not None and row[RAW] is not None]
    if not scored:  # "the validation corpus has no parsed answers" named no corpus given
        raise DatasetError(f"no scored decisions in {log}{'' if since is None else ' since --since'} "
                           f"({len(rows)} decisions, none with a p); record more traffic or widen "
                           "--since")
    labels = np.array([np.nan if row["correct"] is None else float(row["correct"]) for row in scored])
    return Traffic(np.array([row[RAW] for row in scored], dtype=np.float64), labels,
                   len(rows) - len(scored), "logged decisions")


def check_one_network(scorers: set[Scorer], router: Router, log: str | Path, what: str) -> None:
    """`DatasetError` when some rows were scored by another network than `router`'s: their raw
    scores are not its scores."""
    weights = router.config.weights_sha256
    others = sorted(scorer.describe() for scorer in scorers
                    if not scorer.is_network(router.name, weights))
    if others:
        mine = router.name if weights is None else f"{router.name} (weights {weights[:12]}…)"
        raise DatasetError(f"the decision log {log} holds {what} of router(s) {', '.join(others)}, "
                           f"another network than {mine}'s: their scores are not this router's; "
                           "give that router (--router NAME|PATH) or pass --since to skip them")


def validation_set_from_log(router: Router, log: str | Path, *, since: float | None = None,
                            replica: Replica | None = None) -> ValidationSet:
    """p of every decision a log holds from this router's network (labels where given, NaN
    elsewhere; the unscored ones count as unparsed, as they always escalate): what `imad
    calibrate --target-trigger-rate R --log PATH` chooses τ on — the traffic's own rate,
    labelled or not. p is this router's: its calibrator applied to each row's raw score, so the
    rows of a copy with another τ or calibrator count, and τ is chosen on the p it will meet."""
    traffic = traffic_from_log(router, log, since=since, replica=replica)
    source = {"kind": "decision log", "log": str(log), "decisions": traffic.questions,
              "labelled": int(np.sum(~np.isnan(traffic.labels))), "unparsed": traffic.unscored,
              "since": since}
    return ValidationSet(router.calibrator.apply(traffic.raw), traffic.labels, traffic.unscored,
                         source)


def answer_scores_from_log(router: Router, log: str | Path, *, since: float | None = None,
                           until: float | None = None, replica: Replica | None = None
                           ) -> AnswerScores:
    """The raw scores (and labels, where given) of a decision log's scored decisions that served
    the single answer (`imad.decision_log.labelled`): what `imad calibrate --recalibrate …
    --log PATH` fits on, with every scored decision of the range as the traffic the new version
    is measured on. The rows must come from this router's network (`check_one_network`).
    `files` names the log, the rows used and their time range, for the new version's model card."""
    from imad.decision_log.labelled import labelled_scores

    scores = labelled_scores(log, since=since, until=until, include_unlabelled=True,
                             replica=replica)
    if not scores.rows:
        raise DatasetError(f"{scores.describe()} (rows that served the single answer and carry "
                           "the router's raw score); record more traffic or widen --since")
    check_one_network(set(scores.scorers), router, scores.log, "scores")  # a URL's password hidden
    labels = [None if np.isnan(value) else int(value) for value in scores.correct]
    return AnswerScores(scores.raw_scores, labels, scores.skipped_unscored, [scores.describe()],
                        traffic=traffic_from_log(router, log, since=since, replica=replica))


def _features(router: Router, records: Sequence[CorpusRecord]) -> np.ndarray:
    """The feature matrix of parsed records: `DatasetError` for a `parsed` answer that is not a
    self-critique, or text that is not Unicode (a lone surrogate, which the tokenizer cannot
    encode), naming the question."""
    from imad.critique.schema import CritiqueResponse
    from imad.router import featurize

    for record in records:
        texts = {"question.text": record.text, **{f"parsed.{key}": value for key, value
                                                  in (record.parsed or {}).items()}}
        for name, text in texts.items():
            position = first_lone_surrogate(text) if isinstance(text, str) else None
            if position is not None:
                raise DatasetError(f"question {record.question_id!r}: {name} holds a lone surrogate "
                                   f"U+{ord(text[position]):04X} at position {position}, which is "
                                   "not Unicode text; fix or drop that record")
    try:
        responses = [CritiqueResponse.from_dict(r.parsed) for r in records if r.parsed is not None]
    except (KeyError, TypeError, ValueError) as error:
        raise DatasetError(f"a corpus record's `parsed` answer is not a self-critique ({error})") from None
    return np.asarray(featurize.extract_batch([r.text for r in records], responses,
                                              router.feature_schema_version), dtype=np.float64)
