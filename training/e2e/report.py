"""The end-to-end benchmark's outputs: a JSON document with every number and a Markdown report.

Written to `--out` as e2e-report.json and e2e-report.md (beside the calibration run's
report.json/report.md). The JSON holds, per dataset and method, the summary numbers
(`training.e2e.metrics`) and every question's outcome; the paper's reference
numbers (`training.e2e.paper_table3`) sit beside ours, labelled as another model's. No
timestamps or wall times are written, so the same cache gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from imad.constraints import settable_fields
from imad.debate.base import AgentConfig
from training.e2e.deferral_run import render_deferral
from training.e2e.methods import FULL_MAD, TOKEN_GOAL
from training.e2e.metrics import (
    DECISIONS,
    TRANSITION_MARKS,
    TRANSITIONS,
    accuracy_per_100k_tokens,
    mean_over_datasets,
    summarise,
    versus_full_mad,
)
from training.e2e.paper_table3 import (
    DATASET_ROWS,
    MEAN_OF_SIX,
    PAPER,
    PAPER_MODEL,
    QUOTES,
    reference,
)
from training.evaluation.report import to_jsonable, write_report

E2E_REPORT_SCHEMA = 1
E2E_JSON_FILE = "e2e-report.json"
E2E_MARKDOWN_FILE = "e2e-report.md"
DEFINITIONS = {
    "accuracy": "correct final answers / questions; a question whose method failed counts with "
                "the answer it has (usually none, so wrong)",
    "tokens_per_question": "prompt + completion tokens of every LLM call the method made for the "
                           "question (replayed calls included), averaged over questions",
    "apt": "accuracy per 100k tokens = accuracy (%) / (tokens per question / 100,000)",
    "messages_per_question": "agent-written arguments placed in another agent's prompt "
                             "(imad.debate.result), averaged over questions",
    "decisions": "skip/trigger × (single-agent answer right/wrong → final answer right/wrong)",
    "goal": f"iMAD tokens ≤ {TOKEN_GOAL:.0%} of full MAD's at no loss of accuracy",
}
_DEFINITION_TITLES = {"accuracy": "Accuracy", "tokens_per_question": "Tokens/q", "apt": "ApT",
                      "messages_per_question": "Messages/q", "decisions": "Decisions",
                      "goal": "Goal"}
_SHARED_FIELDS = frozenset(settable_fields(AgentConfig))


def build_document(run: Mapping[str, Any],
                   outcomes: Mapping[str, Mapping[str, Sequence[Any]]]) -> dict[str, Any]:
    """The JSON document: the run's settings (`run`), per dataset and method (`outcomes`:
    dataset → method → `e2e.QuestionOutcome` per question) the summary numbers and every
    outcome, the mean over datasets, and the paper's numbers."""
    methods = run["methods"]
    datasets: dict[str, Any] = {}
    for name, by_method in outcomes.items():
        summaries = {m: summarise(rows, selective=methods[m]["selective"])
                     for m, rows in by_method.items()}
        if FULL_MAD in summaries:
            for method, summary in summaries.items():
                if methods[method]["routed"]:
                    summary["versus_full_mad"] = versus_full_mad(summary, summaries[FULL_MAD])
        datasets[name] = {
            "questions": len(next(iter(by_method.values()))),
            "methods": summaries,
            "answers": {m: [o.to_dict() for o in rows] for m, rows in by_method.items()},
        }
    document = {
        "schema": E2E_REPORT_SCHEMA, "kind": "end_to_end", **run, "definitions": DEFINITIONS,
        "datasets": datasets,
        "summary": mean_over_datasets({n: d["methods"] for n, d in datasets.items()},
                                      list(methods)),
        "paper": reference(),
    }
    return to_jsonable(document)


def write_e2e_report(document: Mapping[str, Any], out_dir: Path) -> tuple[Path, Path, str]:
    """Write e2e-report.json and e2e-report.md; return their paths and the Markdown."""
    json_path, markdown_path = write_report(document, out_dir, render=render_e2e_markdown,
                                            json_file=E2E_JSON_FILE,
                                            markdown_file=E2E_MARKDOWN_FILE)
    return json_path, markdown_path, markdown_path.read_text(encoding="utf-8")


# --- Markdown ------------------------------------------------------------------------------------


def _number(value: Any, digits: int = 1, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{suffix}"


def render_e2e_markdown(document: Mapping[str, Any]) -> str:
    """The human-readable report of a document made by `build_document`."""
    llm, cache, methods = document["llm"], document["cache"], document["methods"]
    router = document.get("router")
    spec = f" (`--llm {llm['spec']}`)" if llm.get("spec") else ""
    lines = [
        "# End-to-end benchmark",
        "",
        f"- Model: `{llm['model_id']}`{spec}; every call through the cache `{cache['path']}` "
        f"(mode {cache['mode']}).",
    ]
    if router is not None:
        primed = sum(cache["primed_from_corpus"].values())
        lines.append(f"- iMAD: router `{router['name']}` from `{router['path']}`, τ = "
                     f"{router['tau']:.4g} ({router['tau_method']}); self-critique prompt "
                     f"`{document['self_critique']['prompt_version']}`, confidence "
                     f"`{document['self_critique']['confidence_source']}`; {primed} self-critique "
                     "answer(s) reused from the calibration run's corpus.")
    lines.append("- Methods: " + "; ".join(
        f"{m['title']} ({_config_text(m)})" for m in methods.values()) + ".")
    lines += [f"- {_DEFINITION_TITLES[name]}: {text}."
              for name, text in document["definitions"].items()]
    lines.append("")
    for name, data in document["datasets"].items():
        lines += _dataset_section(name, data, methods)
    lines += _mean_section(document)
    if document.get("deferral"):
        lines += render_deferral(document["deferral"])
    return "\n".join(lines)


def _config_text(method: Mapping[str, Any]) -> str:
    config = method["backend_config"]
    own = [f"{k}={v}" for k, v in config.items() if k not in _SHARED_FIELDS and v is not None
           and not isinstance(v, dict)]
    head = f"`{method['backend']}`" + (" behind the router" if method["routed"] else "")
    return head + (": " + ", ".join(own) if own else "")


def _dataset_section(name: str, data: Mapping[str, Any], methods: Mapping[str, Any]) -> list[str]:
    summaries = data["methods"]
    lines = [f"## {name} ({data['questions']} questions)", "",
             "| method | accuracy | tokens/q | ApT | messages/q | calls/q | model s/q | failures "
             "| tokens vs full MAD |", "|---|" + "---:|" * 8]
    mad_tokens = summaries[FULL_MAD]["tokens_per_question"] if FULL_MAD in summaries else None
    for method, row in summaries.items():
        ratio = ""
        if mad_tokens and row["tokens_per_question"] is not None:
            ratio = _number(100 * row["tokens_per_question"] / mad_tokens, 1, "%")
        failures = str(row["failures"])
        if row["failure_kinds"]:
            failures += " (" + ", ".join(f"{k} {v}" for k, v in row["failure_kinds"].items()) + ")"
        if row["failed_calls"]:
            failures += f"; {row['failed_calls']} failed call{'s' if row['failed_calls'] > 1 else ''}"
        lines.append(
            f"| {methods[method]['title']} | {_number(row['accuracy_pct'], 1, '%')} "
            f"| {_number(row['tokens_per_question'], 0)} | {_number(row['apt'])} "
            f"| {_number(row['messages_per_question'])} | {_number(row['calls_per_question'])} "
            f"| {_number(row['model_seconds_per_question'])} | {failures} | {ratio} |")
    lines.append("")
    selective = {m: r["decisions"] for m, r in summaries.items() if "decisions" in r}
    if selective:
        marks = [f"{d} {TRANSITION_MARKS[t]}" for d in DECISIONS for t in TRANSITIONS]
        lines += ["Decisions (skip = first answer kept, trigger = debated; single-agent answer → "
                  "final answer):", "",
                  "| method | trigger rate | " + " | ".join(marks) + " | undecided |",
                  "|---|" + "---:|" * (len(marks) + 2)]
        for method, cells in selective.items():
            counts = [str(cells[d][t]) for d in DECISIONS for t in TRANSITIONS]
            lines.append(f"| {methods[method]['title']} | "
                         f"{_number(_percent(cells['trigger_rate']), 1, '%')} | "
                         + " | ".join(counts) + f" | {cells['undecided']} |")
        lines.append("")
    for method, row in summaries.items():
        versus = row.get("versus_full_mad")
        if versus and versus["goal_met"] is not None:
            verdict = "met" if versus["goal_met"] else "not met"
            lines.append(f"- Goal ({DEFINITIONS['goal']}), {methods[method]['title']}: "
                         f"{100 * versus['tokens_ratio']:.1f}% of full MAD's tokens, accuracy "
                         f"{versus['accuracy_delta_pct']:+.1f} points → **{verdict}**.")
    if any(r.get("versus_full_mad") for r in summaries.values()):
        lines.append("")
    lines += _paper_dataset_section(name, summaries, methods)
    return lines


def _percent(share: float | None) -> float | None:
    return None if share is None else 100 * share


def _paper_dataset_section(name: str, summaries: Mapping[str, Any],
                           methods: Mapping[str, Any]) -> list[str]:
    rows = DATASET_ROWS.get(name)
    if not rows:
        return []
    lines = [f"Paper reference for {name} — **{PAPER_MODEL}, a different model** ({PAPER}); "
             "cells the paper summary quotes, not comparable in absolute terms:", "",
             "| paper method | paper accuracy | paper tokens/q | our method | our accuracy "
             "| our tokens/q |", "|---|---:|---:|---|---:|---:|"]
    for row in rows:
        ours = [m for m in row.ours if m in summaries] or [None]
        for method in ours:
            mine = summaries.get(method) if method else None
            lines.append(
                f"| {row.method} | {_number(row.accuracy_pct, 1, '%')} "
                f"| {_number(row.tokens_per_question, 0)} "
                f"| {methods[method]['title'] if mine else '—'} "
                f"| {_number(mine['accuracy_pct'], 1, '%') if mine else ''} "
                f"| {_number(mine['tokens_per_question'], 0) if mine else ''} |")
    lines.append("")
    lines += [f"- “{quote}” — {source}" for quote, source in QUOTES.get(name, ())]
    return [*lines, ""]


def _mean_section(document: Mapping[str, Any]) -> list[str]:
    methods, summary = document["methods"], document["summary"]
    count = len(document["datasets"])
    lines = [f"## Beside the paper: mean over datasets (ours: {count}, paper: 6)", "",
             f"Paper rows: **{PAPER_MODEL}, a different model** ({PAPER}; {MEAN_OF_SIX[0].source}); "
             "the paper's iMAD escalates to MAD, ours to AceMAD or SVR-MAD; the paper's ApT is "
             "computed here with our definition.", "",
             "| method | paper accuracy | paper tokens/q | paper ApT | our method | our accuracy "
             "| our tokens/q | our ApT |", "|---|---:|---:|---:|---|---:|---:|---:|"]
    shown: set[str] = set()
    for row in MEAN_OF_SIX:
        paper_apt = accuracy_per_100k_tokens(row.accuracy_pct, row.tokens_per_question)
        ours = [m for m in row.ours if m in summary] or [None]
        for method in ours:
            shown.add(method or "")
            mine = summary.get(method) if method else None
            lines.append(
                f"| {row.method} | {_number(row.accuracy_pct, 1, '%')} "
                f"| {_number(row.tokens_per_question, 0)} | {_number(paper_apt)} "
                f"| {methods[method]['title'] if mine else '—'} "
                f"| {_number(mine['accuracy_pct'], 1, '%') if mine else ''} "
                f"| {_number(mine['tokens_per_question'], 0) if mine else ''} "
                f"| {_number(mine['apt']) if mine else ''} |")
    for method, mine in summary.items():
        if method not in shown:
            lines.append(f"| — | | | | {methods[method]['title']} "
                         f"| {_number(mine['accuracy_pct'], 1, '%')} "
                         f"| {_number(mine['tokens_per_question'], 0)} | {_number(mine['apt'])} |")
    lines.append("")
    lines += ["The paper on its decisions:", ""]
    lines += [f"- “{quote}” — {source}" for quote, source in QUOTES["decisions"]]
    return [*lines, ""]
