"""The model card's metrics: the validation table of the router and its two baselines, and
AUROC within each dataset and task type beside the pooled number (`imad.router.card`)."""

from __future__ import annotations

import math
from typing import Any

from imad.router.training_record import Metrics

_METRIC_COLUMNS = (
    ("auroc", "AUROC ↑"),
    ("ece", "ECE (15 bins) ↓"),
    ("adaptive_ece", "adaptive ECE ↓"),
    ("brier", "Brier ↓"),
    ("trigger_rate", "trigger rate p < τ"),
)
_SCORER_NAMES = {
    "router": "this router (FocusCal MLP)",
    "confidence_initial": "raw `conf_initial` alone (DOWN-style)",
    "logistic_regression": "logistic regression on the 41 features",
}


def metrics_section(metrics: Metrics | None, threshold: dict[str, Any]) -> str:
    """The card's Metrics section (empty without validation metrics)."""
    if metrics is None or metrics.validation is None:
        return ""
    validation = metrics.validation
    measured_tau = threshold["tau"] if metrics.tau is None else metrics.tau
    tau_note = f"τ = {measured_tau:g}"
    if measured_tau != threshold["tau"]:
        tau_note += (f" (the threshold when they were measured; this checkpoint's τ = "
                     f"{threshold['tau']:g}, see Threshold)")
    header = "| scorer | " + " | ".join(title for _, title in _METRIC_COLUMNS) + " |"
    lines = [
        "## Metrics\n",
        f"On the validation split ({_rows(validation.get('router'))} rows), "
        f"{tau_note}. Both baselines are scored on the same rows; the logistic "
        "regression is fitted on the same training rows and scaler.\n",
        header,
        "|---|" + "---:|" * len(_METRIC_COLUMNS),
    ]
    for key in ("router", "confidence_initial", "logistic_regression"):
        row = validation.get(key)
        if row is not None and row.keys:
            cells = " | ".join(card_number(getattr(row, metric)) for metric, _ in _METRIC_COLUMNS)
            lines.append(f"| {_SCORER_NAMES[key]} | {cells} |")
    note = metrics.selection
    if note:
        lines.append(f"\n{note}")
    return "\n".join(lines) + _within(metrics)


def _within(metrics: Metrics) -> str:
    """AUROC within each dataset and task type beside the pooled one: the pooled
    number mostly says which dataset a question is from when the model is right on one kind."""
    board = metrics.scoreboard
    if not board:
        return ""
    names = [name for name in ("router", "confidence_initial", "logistic_regression")
             if name in board["pooled"]]
    lines = ["\n\n### AUROC within each dataset and task type\n",
             "With 95% bootstrap intervals (1,000 resamples of the validation answers); n/a where "
             "a group's answers are all right or all wrong.\n",
             "| group | n | " + " | ".join(_SCORER_NAMES[name] for name in names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    for grouping, groups in board.items():
        rows = {"all": groups} if grouping == "pooled" else groups
        for group, row in rows.items():
            label = "pooled" if grouping == "pooled" else f"{grouping.replace('_', ' ')} {group}"
            cells = " | ".join(_interval(row[name]) for name in names)
            lines.append(f"| {label} | {row[names[0]]['n']} | {cells} |")
    if metrics.importance:
        shown = ", ".join(f"{row['feature']} {row['auroc_drop']:+.3f}" for row in metrics.importance[:8])
        lines.append(f"\nWhat the router learned (drop in validation AUROC when one feature is "
                     f"shuffled, largest first): {shown}.")
    return "\n".join(lines)


def _interval(row: Any) -> str:
    if row.get("auroc") is None:
        return "n/a"
    return f"{row['auroc']:.3f} [{row['low']:.2f}, {row['high']:.2f}]"


def _rows(row: Any) -> Any:
    return "?" if row is None or row.n is None else row.n


def card_number(value: Any) -> str:
    """A table cell: three decimals for a float, a dash for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
