"""How good the gate is on labelled traffic: ranking, calibration, kept accuracy, deferral.

A label says whether the *served* answer was right. Only rows that served the single answer
(every row in shadow mode, the kept ones otherwise) label the answer the router scored, so the
router's numbers use those rows alone ("scored labelled rows"); a row that served the debate's
answer labels the debate, not the router. Beside the router the same numbers are given for the
self-critique's verbal confidence in its initial answer (`confidence_initial`, the baseline
training.evaluate and the Results page use; on the rows that carry one), a random gate (AUROC 0.5 and
the base accuracy at every escalation rate, in expectation) and the oracle gate (escalates
exactly the wrong answers first).

Too few labels for a number is said in words, never NaN: AUROC needs `MIN_PER_CLASS` correct
and as many wrong answers, the other numbers `MIN_LABELS` rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from imad.decision_log.columns import ESCALATED, SERVED, served_an_answer
from imad.report import metrics

MIN_PER_CLASS = 10
MIN_LABELS = 10


def labelled_quality(rows: list[dict[str, Any]], *, samples: int = metrics.BOOTSTRAP_SAMPLES
                     ) -> dict[str, Any]:
    """The `quality` section of the report (see the module docstring)."""
    scored = [row for row in rows if row["correct"] is not None and row.get(SERVED) != "debate"
              and row.get("p") is not None and served_an_answer(row)]
    y = np.array([row["correct"] for row in scored], dtype=bool)
    p = np.array([row["p"] for row in scored], dtype=np.float64)
    kept = np.array([not would_escalate(row) for row in scored], dtype=bool)
    section: dict[str, Any] = {
        "scored_labelled": int(y.size),
        "correct": int(y.sum()),
        "wrong": int(y.size - y.sum()),
        "debate_served_labelled": sum(1 for row in rows if row["correct"] is not None
                                      and row.get(SERVED) == "debate"),
    }
    section["coverage_note"] = (
        None if not section["debate_served_labelled"] else
        "outside shadow mode the escalated answers served the debate's, so the router's numbers "
        "cover only the answers it kept (p ≥ τ), a truncated range; run with --shadow to measure "
        "it on every answer")
    section["kept_accuracy"] = _with_interval(
        "kept answers", lambda labels, _: metrics.accuracy(labels), y[kept], p[kept], samples)
    router = score_quality(y, p, samples=samples)
    section["router"] = router
    confident = [(row["correct"], row["confidence_initial"]) for row in scored
                 if row.get("confidence_initial") is not None]
    if confident:
        cy = np.array([c for c, _ in confident], dtype=bool)
        cp = np.clip(np.array([v for _, v in confident], dtype=np.float64), 0.0, 1.0)
        section["confidence"] = score_quality(cy, cp, samples=samples)
    else:
        section["confidence"] = {"note": "no scored labelled row carries a verbal confidence "
                                         "(confidence_initial)"}
    section["random"] = {"auroc": 0.5, "note": "a random gate ranks at chance (AUROC 0.5) and keeps "
                         "the base accuracy at every escalation rate"}
    section["oracle"] = {"auroc": 1.0 if router["auroc"] is not None else None,
                         "note": "escalates exactly the wrong answers first"}
    section["deferral"] = deferral(y, p, confident)
    return section


def would_escalate(row: dict[str, Any]) -> bool:
    """What the policy decided (in shadow mode not what was served); older rows: `escalate`."""
    decided = row.get("would_escalate")
    return bool(row.get(ESCALATED) if decided is None else decided)


def score_quality(y: np.ndarray, p: np.ndarray, *, samples: int) -> dict[str, Any]:
    """AUROC, ECE and Brier of one score with 95% bootstrap intervals, and its reliability bins."""
    correct, wrong = int(y.sum()), int(y.size - y.sum())
    result: dict[str, Any] = {"n": int(y.size)}
    if min(correct, wrong) < MIN_PER_CLASS:
        result.update(auroc=None, auroc_interval=None, auroc_note=(
            f"too few labels to rank: AUROC needs at least {MIN_PER_CLASS} correct and "
            f"{MIN_PER_CLASS} wrong answers, the log has {correct} correct and {wrong} wrong"))
    else:
        result.update(auroc=metrics.auroc(y, p),
                      auroc_interval=metrics.bootstrap_interval(metrics.auroc, y, p, samples=samples),
                      auroc_note=None)
    for name, title, metric in (("ece", "ECE", metrics.ece), ("brier", "the Brier score", metrics.brier)):
        if y.size < MIN_LABELS:
            result.update({name: None, f"{name}_interval": None, f"{name}_note": (
                f"too few labels: {title} needs at least {MIN_LABELS} labelled answers, "
                f"the log has {y.size}")})
        else:
            result.update({name: metric(y, p), f"{name}_note": None,
                           f"{name}_interval": metrics.bootstrap_interval(metric, y, p, samples=samples)})
    bins = metrics.calibration_bins(y, p)
    result["reliability"] = {"rows": bins.counts.tolist(), "mean_p": bins.mean_probability.tolist(),
                             "accuracy": bins.accuracy.tolist()}
    return result


def deferral(y: np.ndarray, p: np.ndarray, confident: list[tuple[bool, float]]) -> dict[str, Any]:
    """Accuracy of the kept answers against the escalation rate, for each gate."""
    if y.size < MIN_LABELS:
        return {"note": f"too few labels for a deferral curve: it needs at least {MIN_LABELS} "
                        f"labelled answers, the log has {y.size}"}
    rates, router = metrics.deferral_curve(y, p)
    _, oracle = metrics.deferral_curve(y, y.astype(np.float64))
    curves = {"escalation_rate": rates.tolist(), "router": _kept_only(router, rates, y.size),
              "random": _kept_only(np.full(rates.size, y.mean()), rates, y.size),
              "oracle": _kept_only(oracle, rates, y.size),
              "undefined_note": "null where every answer is escalated: no answer is kept, so "
                                "there is no accuracy of the kept answers"}
    if len(confident) >= MIN_LABELS:
        cy = np.array([c for c, _ in confident], dtype=bool)
        cv = np.array([v for _, v in confident], dtype=np.float64)
        curves["confidence"] = _kept_only(metrics.deferral_curve(cy, cv, rates)[1], rates, cy.size)
    return curves


def _kept_only(accuracy: np.ndarray, rates: np.ndarray, n: int) -> list[float | None]:
    """The curve's accuracies, None where the rate escalates all `n` answers (none kept)."""
    escalated = np.minimum(np.floor(rates * n + 1e-9), n)
    return [float(value) if kept > 0 else None
            for value, kept in zip(accuracy, n - escalated, strict=True)]


def _with_interval(what: str, metric, y: np.ndarray, p: np.ndarray, samples: int) -> dict[str, Any]:
    if y.size < MIN_LABELS:
        return {"value": None, "interval": None, "n": int(y.size),
                "note": f"too few labelled {what}: a number needs at least {MIN_LABELS}, the log "
                        f"has {y.size}"}
    return {"value": metric(y, p), "n": int(y.size), "note": None,
            "interval": metrics.bootstrap_interval(metric, y, p, samples=samples)}
