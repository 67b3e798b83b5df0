"""The deferral curve of an end-to-end run (`python -m training.evaluate --e2e --deferral`).

With `--deferral` the iMAD methods run at τ = 1, so every question is escalated and its record
holds both outcomes: the self-critique answer (right or wrong, its tokens, the router's p, the
verbal confidence) and the debate's answer (right or wrong, the rest of the tokens). From those
records `training.evaluation.deferral` computes, for each gate, accuracy and tokens per question
against the escalation rate. A question whose self-critique failed to parse, that was not
escalated, or whose run failed lacks one of the two outcomes: it is left out and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from training.evaluation.deferral import GATE_TITLES, deferral_curves, outcomes, render_table
from training.evaluation.plots import save_deferral_plot

DEFERRAL_TAU = 1.0
"""p ≥ τ keeps; p < 1 for every answer, so τ = 1 escalates all and records both outcomes."""


def usable(row: Any) -> bool:
    """Whether one `QuestionOutcome` holds both outcomes and both gate scores."""
    return (row.error is None and row.escalated is True and row.single_correct is not None
            and row.p is not None and row.confidence is not None and row.single_tokens is not None)


def deferral_section(dataset: str, method: str, rows: Sequence[Any], out_dir: Path
                     ) -> dict[str, Any]:
    """The curves of one routed method on one dataset, its plot written to `out_dir`."""
    kept = [row for row in rows if usable(row)]
    section: dict[str, Any] = {"questions": len(rows), "used": len(kept),
                               "left_out": len(rows) - len(kept)}
    if not kept:
        return {**section, "curves": None, "plot": None}
    data = outcomes([r.single_correct for r in kept], [r.single_tokens for r in kept],
                    [r.correct for r in kept], [r.total_tokens - r.single_tokens for r in kept])
    curves = deferral_curves(data, [r.p for r in kept], [r.confidence for r in kept])
    plot = save_deferral_plot(out_dir / f"deferral-{dataset}-{method}.png",
                              f"{dataset}, {method}: deferral ({len(kept)} questions)", curves,
                              GATE_TITLES)
    return {**section, "single_accuracy": float(data.single_correct.mean()),
            "debate_accuracy": float(data.debate_correct.mean()),
            "curves": {gate: curve.to_dict() for gate, curve in curves.items()},
            "plot": plot.name, "table": render_table(dataset, curves)}


def render_deferral(deferral: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Markdown of every dataset's and method's deferral section."""
    lines = ["## Deferral curves (every question escalated, τ = 1)", "",
             "Accuracy of the final answers and tokens per question when the gate escalates the "
             "given share of questions, lowest score first (ties averaged: the random gate is its "
             "expectation; the oracle escalates the wrong single-agent answers first). AUC: area "
             "under accuracy vs escalation rate.", ""]
    for dataset, methods in deferral.items():
        for method, section in methods.items():
            lines.append(f"### {dataset}, {method}: {section['used']} of {section['questions']} "
                         f"questions ({section['left_out']} left out: unparsed, not escalated or "
                         "failed)")
            lines.append("")
            if section["curves"] is None:
                lines += ["No question holds both outcomes.", ""]
                continue
            lines += [f"Single-agent accuracy {section['single_accuracy']:.3f}, debate accuracy "
                      f"{section['debate_accuracy']:.3f}; plot `{section['plot']}`.", "",
                      *section["table"], ""]
    return lines
