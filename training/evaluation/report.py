"""The evaluation's outputs: a JSON document with every number, and a Markdown report.

The JSON holds, per dataset, the counts, accuracy, tokens, each scorer's metrics and
reliability bins, and every answer's label and probabilities; NaN is written as null (JSON has
no NaN) and a note says why a metric is undefined. No timestamps or timings are written, so
the same inputs give the same bytes.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from training.evaluation.ood import auroc_text
from training.evaluation.recalibration import render_recalibrated, render_study
from training.evaluation.scoring import RANDOM_SEED, SCORERS
from training.metrics import METRICS
from training.scoreboard import IMPORTANCE_REPEATS, format_importance

REPORT_SCHEMA = 1
JSON_FILE = "report.json"
MARKDOWN_FILE = "report.md"
SUMMARY_METRICS = (*METRICS, "trigger_rate", "kept_accuracy")
_COLUMNS = (
    *((name, entry.title) for name, entry in METRICS.items()),
    ("trigger_rate", "trigger@τ"), ("trigger_rate_all", "trigger@τ incl. unparsed"),
    ("kept", "kept"), ("kept_accuracy", "kept accuracy"),
)
_SUMMARY_TITLES = dict(_COLUMNS)
SCORER_TITLES = {
    "router": "router",
    "confidence_initial": "verbal confidence (confidence_initial, DOWN-style)",
    "logistic_regression": "logistic regression",
    "random": "random (reference)",
    "oracle": "oracle (reference)",
}
_INTERVALS = ("ece", "auroc")
"""Columns whose cell carries its 95% bootstrap interval, `value [low, high]`."""


@dataclass(frozen=True)
class EvaluationResult:
    """What a run of `python -m training.evaluate` made, in either mode: the JSON document, the
    Markdown report, where they were written, and what they were computed from."""

    document: dict[str, Any]
    markdown: str
    json_path: Path
    markdown_path: Path
    plots: dict[str, Path] = field(default_factory=dict)
    """Reliability diagrams by dataset (calibration run)."""
    scores: dict[str, Any] = field(default_factory=dict)
    """Dataset → `DatasetScores` (calibration run)."""
    outcomes: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    """Dataset → method → one `QuestionOutcome` per question, in question order (end to end)."""

    def print(self, *, as_json: bool) -> None:
        """The JSON document on stdout, or the Markdown and where the files are."""
        if as_json:
            sys.stdout.write(json_text(self.document))
            return
        print(self.markdown)
        print(f"report: {self.markdown_path}\njson: {self.json_path}")
        for path in self.plots.values():
            print(f"plot: {path}")


def to_jsonable(value: Any) -> Any:
    """Plain JSON types: NaN/inf → None, numpy scalars/arrays → Python, paths → str."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def macro_summary(datasets: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per scorer, the unweighted mean of each metric over the datasets where it is defined."""
    summary: dict[str, dict[str, Any]] = {}
    for scorer in SCORERS:
        row: dict[str, Any] = {}
        for metric in SUMMARY_METRICS:
            values = [d["scorers"][scorer][metric] for d in datasets.values()
                      if d["scorers"].get(scorer) is not None]
            defined = [v for v in values if v is not None and math.isfinite(v)]
            row[metric] = float(np.mean(defined)) if defined else None
            row[f"{metric}_datasets"] = len(defined)
        summary[scorer] = row
    return summary


def json_text(document: Mapping[str, Any]) -> str:
    return json.dumps(to_jsonable(document), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if isinstance(value, int):
        return str(value)
    return f"{value:.3f}"


def _interval_cell(row: Mapping[str, Any], key: str) -> str:
    low, high = row.get(f"{key}_low"), row.get(f"{key}_high")
    if key not in _INTERVALS or low is None or high is None:
        return _cell(row.get(key))
    return f"{_cell(row.get(key))} [{low:.2f}, {high:.2f}]"


def _importance_lines(importance: list[dict[str, Any]] | None) -> list[str]:
    """What the router's ranking leans on in these answers."""
    if not importance:
        return []
    return [f"What the router leans on here (drop in its AUROC when one feature is shuffled, "
            f"mean of {IMPORTANCE_REPEATS}): {format_importance(importance)}.", ""]


def _scorer_table(scorers: Mapping[str, Any]) -> list[str]:
    lines = ["| scorer | " + " | ".join(title for _, title in _COLUMNS) + " |",
             "|---|" + "---:|" * len(_COLUMNS)]
    for name in SCORERS:
        row = scorers.get(name)
        cells = ["not available"] + [""] * (len(_COLUMNS) - 1) if row is None else \
            [_interval_cell(row, key) for key, _ in _COLUMNS]
        lines.append(f"| {SCORER_TITLES[name]} | " + " | ".join(cells) + " |")
    return lines


def render_markdown(document: Mapping[str, Any]) -> str:
    """The human-readable report of a JSON document made by `training.evaluate`."""
    router, llm = document["router"], document["llm"]
    logistic = document["baselines"]["logistic_regression"]
    lines = [
        "# Zero-shot calibration report",
        "",
        f"- Router: `{router['name']}` from `{router['path']}`, τ = {router['tau']:.4g} "
        f"({router['tau_method']}); trained on {', '.join(router['training_datasets']) or 'n/a'}.",
        f"- Answers: `{llm['model_id']}`, prompt `{llm['prompt_version']}`, confidence source "
        f"`{llm['confidence_source']}`; cached under `{document['corpus_dir']}`.",
        f"- Questions per dataset: {document['sample']}.",
        "- Baselines, on the same answers: verbal confidence = the model's own "
        "`confidence_initial` as p (nothing fitted); logistic regression = "
        f"{logistic['description']}, fitted on {logistic['fitted_on_text']}. References, "
        f"through the same metric code: random = a uniform p (seed {RANDOM_SEED}), no signal; "
        "oracle = the labels themselves as p, perfect.",
        "- Metrics: ECE over 15 equal-width bins and over 15 equal-mass bins (adaptive), Brier, "
        "AUROC, on the parsed answers; trigger@τ = share with p < τ (unparsed answers always "
        "escalate: see the column that includes them); kept accuracy = accuracy of the answers "
        "with p ≥ τ. In brackets: the 95% bootstrap interval (1,000 resamples of the answers).",
        *(f"- Note: {note}." for note in document.get("notes", [])),
        "",
    ]
    for name, data in document["datasets"].items():
        tokens = data["tokens"]["per_question"]
        lines += [
            f"## {name}",
            "",
            f"{data['questions']} questions, {data['parsed']} parsed (parse-failure rate "
            f"{_cell(data['parse_failure_rate'])}{_failures(data['failures'])}); single-agent "
            f"accuracy {_cell(data['accuracy'])} of parsed answers; {tokens:.0f} tokens per "
            f"question; {data['generated_answers']} answers generated, "
            f"{data['reused_answers']} reused from `{data['corpus']}`.",
            "",
            *_scorer_table(data["scorers"]),
            "",
            _ood_line(data.get("ood")),
            "",
            *_within_lines(data.get("scoreboard")),
            *_importance_lines(data.get("importance")),
        ]
        if data.get("recalibration"):
            lines += render_study(name, data["recalibration"])
        if data.get("recalibrated"):
            lines += render_recalibrated(data["recalibrated"], SCORER_TITLES)
        lines += [f"> note: {note}" for note in data["notes"]]
        if data["notes"]:
            lines.append("")
        if data.get("plot"):
            lines += [f"![reliability diagram of {name}]({data['plot']})", ""]
    if len(document["datasets"]) > 1:
        lines += ["## Mean over datasets", "",
                  "| scorer | " + " | ".join(_SUMMARY_TITLES.get(m, m) for m in SUMMARY_METRICS)
                  + " |",
                  "|---|" + "---:|" * len(SUMMARY_METRICS)]
        for name, row in document["summary"].items():
            lines.append(f"| {SCORER_TITLES[name]} | "
                         + " | ".join(_cell(row[m]) for m in SUMMARY_METRICS) + " |")
        lines.append("")
    return "\n".join(lines)


def _ood_line(ood: Mapping[str, Any] | None) -> str:
    if not ood:
        return "OOD: the router checkpoint has no OOD statistics."
    unflagged = ood["n"] - ood["flagged"]
    return (f"OOD ({ood['method']}, threshold {ood['threshold']:.3g}): {ood['flagged']} of "
            f"{ood['n']} parsed answers flagged ({_cell(ood['flagged_share'])}); router AUROC on "
            f"flagged {auroc_text(ood['auroc_flagged'], ood['flagged'])}, on unflagged "
            f"{auroc_text(ood['auroc_unflagged'], unflagged)}.")


def _failures(failures: Mapping[str, int]) -> str:
    return "" if not failures else ": " + ", ".join(f"{k} {v}" for k, v in failures.items())


def write_report(document: Mapping[str, Any], out_dir: Path, *,
                 render: Callable[[Mapping[str, Any]], str] = render_markdown,
                 json_file: str = JSON_FILE, markdown_file: str = MARKDOWN_FILE
                 ) -> tuple[Path, Path]:
    """Write the JSON document and its Markdown rendering (`render`) into `out_dir` (default
    names: report.json, report.md); return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, markdown_path = out_dir / json_file, out_dir / markdown_file
    json_path.write_text(json_text(document), encoding="utf-8")
    markdown_path.write_text(render(to_jsonable(document)), encoding="utf-8")
    return json_path, markdown_path


def _within_lines(board: dict[str, Any] | None) -> list[str]:
    """AUROC with its 95% bootstrap interval on this dataset and within each task type in it
   : whether p ranks answers of the same kind, not which kind they are."""
    if not board or not board["pooled"]:
        return []

    def cells(row: dict[str, Any]) -> str:
        return ", ".join(f"{name} " + ("n/a" if value["auroc"] is None else
                                       f"{value['auroc']:.3f} [{value['low']:.2f}, {value['high']:.2f}]")
                         for name, value in row.items())

    lines = [f"AUROC [95% bootstrap interval] on this dataset: {cells(board['pooled'])}."]
    for group, row in board.get("task_type", {}).items():
        n = next(iter(row.values()))["n"]
        lines.append(f"Within task type {group} (n = {n}): {cells(row)}.")
    return [" ".join(lines), ""]
