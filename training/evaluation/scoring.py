"""Score one dataset's answers with the router and both baselines, and measure each.

Only parsed answers have features, a label and hence a score; unparsed ones (parse errors,
truncations, LLM errors) are counted, and in `trigger_rate_all` they count as escalated, as
the pipeline escalates them. Per scorer: ECE (15 equal-width bins), adaptive ECE, Brier,
AUROC (null when the labels hold one class), the trigger rate p < τ, the number and accuracy
of the answers kept (p ≥ τ), and the reliability-diagram bins. Every scorer uses the router's
τ, so the trigger rates are comparable. ECE and AUROC carry 95% bootstrap intervals
(`training.scoreboard`). Beside the three scorers, two references go through the same metric
code, so a reader sees where "no signal" and "perfect" lie on each dataset: `random`, a seeded
uniform p (AUROC about 0.5, the ECE of a blind guess), and `oracle`, the labels themselves as p
(AUROC 1, ECE 0). `importance` is the router's permutation importance on the evaluated answers
(`training.scoreboard.permutation_importance`): which features its ranking leans on here.
With OOD statistics in the checkpoint, `ood` holds
the share of parsed answers flagged and the router's AUROC on the flagged and unflagged ones
(`training.evaluation.ood`); None without them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from imad.corpus_records import CorpusRecord
from imad.critique.schema import CritiqueResponse
from imad.router import Router
from imad.router.router import CONFIDENCE_FEATURE
from training.baselines import LogisticBaseline, confidence_probabilities
from training.evaluation.ood import ood_split
from training.evaluation.responses import DatasetResponses
from training.feature_cache import extract_features
from training.metrics import bin_indices, calibration_bins, score_report
from training.scoreboard import (
    auroc_interval,
    ece_interval,
    permutation_importance,
    scoreboard,
    without_nan,
)

REFERENCE_SCORERS = ("random", "oracle")
"""No-signal and perfect references, scored like the rest (not drawn in the reliability plots)."""
SCORERS = ("router", "confidence_initial", "logistic_regression", *REFERENCE_SCORERS)
RANDOM_SEED = 0
"""Seed of the random scorer's uniform p, so a rerun gives the same bytes."""
# Below this many right (or wrong) answers an AUROC is a ranking of a handful of points.
MIN_CLASS_FOR_AUROC = 10


@dataclass(frozen=True)
class DatasetScores:
    """Labels and each scorer's probabilities on the parsed answers, plus the JSON summary."""

    name: str
    labels: np.ndarray
    probabilities: dict[str, np.ndarray | None]
    """Scorer → p per parsed answer; None when the scorer could not be built."""
    summary: dict[str, Any]


def record_status(record: CorpusRecord) -> str:
    """ok | parse_error | truncated | llm_error (the prefix `make_record` writes)."""
    if record.label is not None and record.parsed is not None:
        return "ok"
    return (record.parse_error or "unlabelled").split(":", 1)[0]


def scorer_metrics(labels: np.ndarray, p: np.ndarray, tau: float, n_questions: int) -> dict[str, Any]:
    """All numbers of one scorer on one dataset (see the module docstring)."""
    report: dict[str, Any] = score_report(labels, p, tau=tau)
    report["ece_low"], report["ece_high"] = ece_interval(labels, p)
    interval = auroc_interval(labels, p)
    report["auroc_low"], report["auroc_high"] = interval["low"], interval["high"]
    kept = p >= tau
    report["kept"] = int(kept.sum())
    report["kept_accuracy"] = float(labels[kept].mean()) if kept.any() else math.nan
    n_unparsed = n_questions - int(p.size)
    report["trigger_rate_all"] = (n_unparsed + int((~kept).sum())) / n_questions
    bins = calibration_bins(labels, p)
    report["bins"] = {
        "index": np.unique(bin_indices(p)).tolist(),
        "count": bins.counts.tolist(),
        "accuracy": bins.accuracy.tolist(),
        "confidence": bins.mean_probability.tolist(),
    }
    return report


def score_dataset(responses: DatasetResponses, router: Router,
                  logistic: LogisticBaseline | None, *, feature_cache: str | None = None,
                  logistic_note: str | None = None) -> DatasetScores:
    """Features → p for every scorer → metrics, for one dataset's answers."""
    records = responses.records
    parsed = [r for r in records if r.label is not None and r.parsed is not None]
    labels = np.array([int(r.label) for r in parsed], dtype=np.int64)
    probabilities: dict[str, np.ndarray | None] = dict.fromkeys(SCORERS)
    ood: dict[str, Any] | None = None
    importance: list[dict[str, Any]] | None = None
    if parsed:
        matrix = extract_features([str(r.question["text"]) for r in parsed],
                                  [CritiqueResponse.from_dict(r.parsed) for r in parsed],
                                  cache=feature_cache, schema_version=router.feature_schema_version)
        column = router.feature_names.index(CONFIDENCE_FEATURE)
        probabilities["router"] = router.predict_proba(matrix)
        if router.ood_detector is not None:
            ood = ood_split(router.ood_detector, router.scale(matrix), labels, probabilities["router"])
        probabilities["confidence_initial"] = confidence_probabilities(matrix, column)
        if logistic is not None:
            probabilities["logistic_regression"] = logistic.predict_proba(matrix)
        if np.unique(labels).size == 2:
            importance = permutation_importance(router.predict_raw, matrix, labels,
                                                router.feature_names)
    else:
        empty = np.zeros(0)
        probabilities.update(router=empty, confidence_initial=empty)
        if logistic is not None:
            probabilities["logistic_regression"] = empty
    probabilities.update(reference_probabilities(labels))
    n_questions = len(records)
    scorers = {
        name: None if p is None else scorer_metrics(labels, p, router.config.threshold.tau, n_questions)
        for name, p in probabilities.items()
    }
    failures: dict[str, int] = {}
    for record in records:
        status = record_status(record)
        if status != "ok":
            failures[status] = failures.get(status, 0) + 1
    prompt = sum(r.prompt_tokens for r in records)
    completion = sum(r.completion_tokens for r in records)
    correct = int(labels.sum())
    summary = {
        "questions": n_questions,
        "parsed": len(parsed),
        "failures": dict(sorted(failures.items())),
        "parse_failure_rate": (n_questions - len(parsed)) / n_questions,
        "accuracy": correct / len(parsed) if parsed else math.nan,
        "accuracy_all": correct / n_questions,
        "tokens": {"prompt": prompt, "completion": completion,
                   "per_question": (prompt + completion) / n_questions},
        "corpus": str(responses.corpus_path),
        "reused_answers": responses.reused,
        "generated_answers": responses.generated,
        "scorers": scorers,
        "ood": ood,
        "importance": importance,
        "scoreboard": without_nan(scoreboard(
            labels, {name: p for name, p in probabilities.items() if p is not None},
            {"task_type": [str(r.question.get("task_type", "unknown")) for r in parsed]})),
        "notes": dataset_notes(labels, logistic_note),
        "answers": _answers(records, parsed, probabilities),
    }
    return DatasetScores(responses.name, labels, probabilities, summary)


def reference_probabilities(labels: np.ndarray, seed: int = RANDOM_SEED) -> dict[str, np.ndarray]:
    """The reference scorers' p: `random`, uniform on [0, 1) from `seed`; `oracle`, the labels."""
    return {"random": np.random.default_rng(seed).uniform(size=labels.size),
            "oracle": labels.astype(np.float64)}


def dataset_notes(labels: np.ndarray, logistic_note: str | None) -> list[str]:
    """What a reader must know before trusting this dataset's numbers (e.g. an AUROC on 1 answer)."""
    notes = []
    if labels.size == 0:
        notes.append("no parsed answers: nothing to score, every metric is null")
    elif np.unique(labels).size < 2:
        kind = "right" if labels[0] == 1 else "wrong"
        notes.append(f"all {labels.size} parsed answers are {kind}: AUROC is undefined (null)")
    else:
        right = int(labels.sum())
        fewer = min(right, labels.size - right)
        if fewer < MIN_CLASS_FOR_AUROC:
            kind = "right" if right == fewer else "wrong"
            notes.append(f"only {fewer} of {labels.size} parsed answers are {kind}: AUROC ranks "
                         f"{fewer} answer(s) against the rest, read it as noise")
    if logistic_note:
        notes.append(logistic_note)
    return notes


def _answers(records: tuple[CorpusRecord, ...], parsed: list[CorpusRecord],
             probabilities: dict[str, np.ndarray | None]) -> list[dict[str, Any]]:
    """Per question: id, status, label and each scorer's p (null when unparsed)."""
    position = {id(record): index for index, record in enumerate(parsed)}
    rows = []
    for record in records:
        index = position.get(id(record))
        p = {name: None if values is None or index is None else float(values[index])
             for name, values in probabilities.items()}
        rows.append({"id": record.question_id,
                     "status": record_status(record),
                     "label": record.label, "p": p})
    return rows
