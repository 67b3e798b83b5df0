"""How much a few labels of the target traffic fix p: `python -m training.evaluate --recalibrate N`.

For one dataset's parsed answers (router score s, label y), each of `splits` seeded splits takes
N answers as the user's labelled sample and scores the rest:

- zero-shot: the router's p on the rest, as shipped;
- auto: `imad.fit_calibrator`'s default on the N labelled answers (the base rate unless Platt
  or isotonic beats it beyond chance; it takes labels of one class, so it is never skipped);
- platt, isotonic, temperature: `imad.fit_calibrator` fitted on the N labelled answers;
- prior_shift: fitted on the rest's scores alone (no labels: the traffic is what it sees), with
  its estimated accuracy beside the rest's true accuracy;
- base rate: the N labels' mean as a constant p, the calibration a user gets by counting.

A split whose N labels hold a single class cannot fit the labelled methods; it is counted
(`skipped`) rather than hidden. Reported per method: mean, standard deviation, median and the
2.5–97.5% range over splits of ECE (15 equal-width bins), Brier and AUROC on the held-out rest.

`recalibrated_scorers` puts every scorer of the report (router, raw confidence, logistic
regression, and the random and oracle references) through the same splits with `auto` only, so
the zero-shot and recalibrated numbers of each sit side by side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from imad.errors import ConfigError
from imad.router.calibrators import fit_calibrator
from training.evaluation.config import MIN_HELD_OUT, recalibrate_refusal
from training.metrics import METRICS as REGISTERED_METRICS

RECALIBRATION_SPLITS = 20
LABELLED_METHODS = ("platt", "isotonic", "temperature")
STUDY_METHODS = ("zero_shot", "auto", *LABELLED_METHODS, "prior_shift", "base_rate")
METRICS = ("ece", "brier", "auroc")


def recalibration_study(scores: np.ndarray, labels: np.ndarray, n_labels: int, *,
                        training_prior: float | None, splits: int = RECALIBRATION_SPLITS,
                        seed: int = 0, labelled_methods: tuple[str, ...] = LABELLED_METHODS
                        ) -> dict[str, Any]:
    """Held-out metrics of every method over `splits` seeded splits (see the module docstring);
    `labelled_methods` narrows the fitted methods beside `auto` (none: zero-shot, auto, base rate)."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if not MIN_HELD_OUT <= n_labels <= scores.size - MIN_HELD_OUT:
        raise ConfigError("recalibrate (--recalibrate)", recalibrate_refusal(
            n_labels, f"{scores.size} parsed answers in this dataset"))
    rows: dict[str, list[dict[str, float]]] = {method: [] for method in STUDY_METHODS
                                               if method not in LABELLED_METHODS
                                               or method in labelled_methods}
    skipped = 0
    choices: dict[str, int] = {}
    estimates: list[float] = []
    truths: list[float] = []
    for split in range(splits):
        order = np.random.default_rng([seed, split]).permutation(scores.size)
        fit, rest = order[:n_labels], order[n_labels:]
        y_rest = labels[rest]
        rows["zero_shot"].append(_metrics(y_rest, scores[rest]))
        rows["base_rate"].append(_metrics(y_rest, np.full(rest.size, labels[fit].mean())))
        chosen = fit_calibrator(scores[fit], labels[fit])
        rows["auto"].append(_metrics(y_rest, chosen.apply(scores[rest])))
        choices[chosen.kind] = choices.get(chosen.kind, 0) + 1
        if training_prior is not None:
            shifted = fit_calibrator(scores[rest], method="prior_shift", training_prior=training_prior)
            rows["prior_shift"].append(_metrics(y_rest, shifted.apply(scores[rest])))
            estimates.append(shifted.fitted_on.estimated_accuracy)
            truths.append(float(y_rest.mean()))
        if np.unique(labels[fit]).size < 2:
            skipped += 1
            continue
        for method in labelled_methods:
            calibrator = fit_calibrator(scores[fit], labels[fit], method)
            rows[method].append(_metrics(y_rest, calibrator.apply(scores[rest])))
    return {
        "n_labels": n_labels, "splits": splits, "seed": seed, "held_out": int(scores.size - n_labels),
        "skipped_single_class": skipped, "auto_choices": choices,
        "methods": {method: _summary(values) for method, values in rows.items()},
        "prior_shift": None if not estimates else {
            "training_prior": training_prior,
            "estimated_accuracy_mean": float(np.mean(estimates)),
            "estimated_accuracy_std": float(np.std(estimates)),
            "true_accuracy_mean": float(np.mean(truths)),
        },
    }


def best_labelled_method(study: dict[str, Any]) -> str | None:
    """The labelled method with the lowest mean held-out ECE (None when every split skipped)."""
    means = {m: study["methods"][m]["ece_mean"] for m in LABELLED_METHODS
             if study["methods"][m]["splits"]}
    return min(means, key=means.__getitem__) if means else None


def _metrics(labels: np.ndarray, p: np.ndarray) -> dict[str, float]:
    return {name: REGISTERED_METRICS[name].compute(labels, p) for name in METRICS}


def _summary(values: list[dict[str, float]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"splits": len(values)}
    for metric in METRICS:
        column = [row[metric] for row in values if not math.isnan(row[metric])]
        summary[f"{metric}_mean"] = float(np.mean(column)) if column else None
        summary[f"{metric}_std"] = float(np.std(column)) if column else None
        summary[f"{metric}_median"] = float(np.median(column)) if column else None
        low, high = np.percentile(column, [2.5, 97.5]) if column else (None, None)
        summary[f"{metric}_low"], summary[f"{metric}_high"] = _float(low), _float(high)
    return summary


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def recalibrated_scorers(probabilities: Mapping[str, np.ndarray | None], labels: np.ndarray,
                         n_labels: int, *, splits: int = RECALIBRATION_SPLITS, seed: int = 0
                         ) -> dict[str, Any]:
    """Per scorer (None where it could not be built): its held-out zero-shot and `auto` rows and
    what auto chose, on the same seeded splits for every scorer."""
    rows: dict[str, Any] = {}
    for name, p in probabilities.items():
        if p is None:
            rows[name] = None
            continue
        study = recalibration_study(p, labels, n_labels, training_prior=None, splits=splits,
                                    seed=seed, labelled_methods=())
        rows[name] = {"zero_shot": study["methods"]["zero_shot"], "auto": study["methods"]["auto"],
                      "auto_choices": study["auto_choices"]}
    return {"n_labels": n_labels, "splits": splits, "seed": seed, "scorers": rows}


def render_recalibrated(recalibrated: dict[str, Any], titles: Mapping[str, str]) -> list[str]:
    """Every scorer's held-out ECE and AUROC, zero-shot and after `auto`, as median [2.5–97.5%
    of the splits]."""
    lines = [f"Every scorer before and after `auto` on the same {recalibrated['n_labels']} labels "
             f"(median over {recalibrated['splits']} seeded splits [2.5–97.5% of the splits], "
             "held-out answers):", "",
             "| scorer | ECE zero-shot | ECE auto | AUROC zero-shot | AUROC auto | auto chose |",
             "|---|---:|---:|---:|---:|---|"]
    for name, row in recalibrated["scorers"].items():
        if row is None:
            lines.append(f"| {titles.get(name, name)} | not available | | | | |")
            continue
        cells = [_median_range(row[method], metric) for metric in ("ece", "auroc")
                 for method in ("zero_shot", "auto")]
        chose = ", ".join(f"{kind} {count}" for kind, count in sorted(row["auto_choices"].items()))
        lines.append(f"| {titles.get(name, name)} | {' | '.join(cells)} | {chose} |")
    return lines + [""]


def _median_range(row: dict[str, Any], metric: str) -> str:
    median, low, high = (row[f"{metric}_{part}"] for part in ("median", "low", "high"))
    return "n/a" if median is None else f"{median:.3f} [{low:.2f}, {high:.2f}]"


def render_study(name: str, study: dict[str, Any]) -> list[str]:
    """The Markdown table of one dataset's study."""
    lines = [f"### {name}: recalibrated on {study['n_labels']} labelled answers "
             f"({study['splits']} seeded splits, scored on the other {study['held_out']})", "",
             "| method | ECE | ECE median | Brier | AUROC | splits |", "|---|---:|---:|---:|---:|---:|"]
    for method, row in study["methods"].items():
        cells = [_mean_std(row, metric) for metric in METRICS]
        median = "n/a" if row["ece_median"] is None else f"{row['ece_median']:.3f}"
        lines.append(f"| {method} | {cells[0]} | {median} | {' | '.join(cells[1:])} | {row['splits']} |")
    choices = ", ".join(f"{kind} {count}" for kind, count in sorted(study.get("auto_choices", {}).items()))
    if choices:
        lines += ["", f"auto chose: {choices} (of {study['splits']} splits)."]
    if study["skipped_single_class"]:
        lines += ["", f"{study['skipped_single_class']} of {study['splits']} splits drew labels of one "
                  "class only: the labelled methods were not fitted there."]
    shift = study.get("prior_shift")
    if shift:
        lines += ["", f"Prior shift (no labels): estimated accuracy {shift['estimated_accuracy_mean']:.3f} "
                  f"± {shift['estimated_accuracy_std']:.3f}, true {shift['true_accuracy_mean']:.3f} "
                  f"(training accuracy {shift['training_prior']:.3f})."]
    return lines + [""]


def _mean_std(row: dict[str, Any], metric: str) -> str:
    mean, std = row[f"{metric}_mean"], row[f"{metric}_std"]
    return "n/a" if mean is None else f"{mean:.3f} ± {std:.3f}"
