"""What the shadow debates would have changed, by decile of p (the gate's real test).

A shadow debate runs on a seeded random share of requests, would-escalate and would-keep
alike, after the single answer was served. Comparing its answer with the single answer says
how often the debate changes the answer; where the single answer is labelled, a change of a
right answer is counted as broken — an inference, not a label: a question has one right answer,
so a different answer to a right one is taken to be wrong — and a change of a wrong answer fixed
it when the label says the debate's answer was right (`debate_correct`), or is "unknown" when
no one labelled the debate's answer. A gate that picks the right questions shows the fixes in
the low deciles of p and the breaks in the high ones.

Deciles are of p over the shadow-debated rows (each holds about a tenth of them), named by
their p range. Answers compare after case and space are normalised, or by their stored
SHA-256 when the log was written without `--log-text`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from imad.decision_log.encode import HASH_PREFIX, normalise_answer

DECILES = 10
SMALL_DECILE_ROWS = 10
"""A decile with fewer shadow-debated rows is marked small: its counts are anecdotes, not rates."""


def shadow_section(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The `shadow` section of the report."""
    debated = [row for row in rows if row.get("shadow_debate") and row.get("debate_answer") is not None
               and row.get("single_answer") is not None]
    if not debated:
        return {"rows": 0, "note": "no shadow-debated decision in the log (run with "
                                   "--shadow --shadow-debate-rate R to measure what a debate changes)"}
    changed = [answers_differ(row["single_answer"], row["debate_answer"]) for row in debated]
    section: dict[str, Any] = {"rows": len(debated), "changed": sum(changed),
                               "changed_share": sum(changed) / len(debated)}
    scored = [(row, change) for row, change in zip(debated, changed, strict=True)
              if row.get("p") is not None]
    if not scored:
        section["by_decile"] = []
        return section
    p = np.array([row["p"] for row, _ in scored])
    edges = np.quantile(p, np.linspace(0.0, 1.0, DECILES + 1))
    decile = np.clip(np.searchsorted(edges[1:-1], p, side="right"), 0, DECILES - 1)
    section["by_decile"] = [_decile(index, edges, [scored[i] for i in np.flatnonzero(decile == index)])
                            for index in range(DECILES) if np.any(decile == index)]
    section["fixed"] = sum(entry["fixed"] for entry in section["by_decile"])
    section["broke"] = sum(entry["broke"] for entry in section["by_decile"])
    return section


def _decile(index: int, edges: np.ndarray, members: list[tuple[dict[str, Any], bool]]) -> dict[str, Any]:
    fixed = broke = unknown = labelled = 0
    for row, change in members:
        if row["correct"] is None:
            continue
        labelled += 1
        if not change:
            continue
        if row["correct"]:
            broke += 1
        elif row.get("debate_correct") is True:
            fixed += 1
        elif row.get("debate_correct") is False:
            pass  # wrong before and after: changed, neither fixed nor broke
        else:
            unknown += 1
    return {"decile": index + 1, "p_from": float(edges[index]), "p_to": float(edges[index + 1]),
            "rows": len(members), "changed": sum(change for _, change in members),
            "labelled": labelled, "fixed": fixed, "broke": broke, "changed_unknown": unknown,
            "small": len(members) < SMALL_DECILE_ROWS}


def answers_differ(single: str, debate: str) -> bool:
    """True when the debate's answer is not the single answer (hashes compare as stored)."""
    if single.startswith(HASH_PREFIX) or debate.startswith(HASH_PREFIX):
        return single != debate
    return normalise_answer(single) != normalise_answer(debate)
