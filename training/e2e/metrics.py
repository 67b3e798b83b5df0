"""The end-to-end benchmark's numbers, from per-question outcomes.

- accuracy: correct answers / questions (a failed question counts with whatever answer it has,
  usually none, so failures count as wrong and are reported beside it);
- tokens per question: prompt + completion tokens of every call, summed, / questions;
- ApT, accuracy per 100k tokens: accuracy (%) / (tokens per question / 100,000), i.e.
  `accuracy_pct * 100_000 / tokens_per_question`. The paper summary names ApT without a
  formula; this is the plain reading of "accuracy per 100k tokens", applied to the paper's
  numbers too;
- decision breakdown (selective methods), as in the iMAD paper: skip/trigger × (✓→✓, ✓→✗,
  ✗→✓, ✗→✗), the first mark whether the single-agent answer was right, the second whether the
  final answer is; a question without a decision (its method failed before deciding) is
  counted as `undecided`, so the eight cells plus `undecided` sum to the questions;
- versus full MAD (iMAD): token ratio, accuracy difference, and whether the goal — at most 40%
  of full MAD's tokens at no loss of accuracy — is met.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from training.e2e.methods import TOKEN_GOAL
from training.e2e.outcome import QuestionOutcome

TRANSITIONS = ("right_to_right", "right_to_wrong", "wrong_to_right", "wrong_to_wrong")
TRANSITION_MARKS = {"right_to_right": "✓→✓", "right_to_wrong": "✓→✗",
                    "wrong_to_right": "✗→✓", "wrong_to_wrong": "✗→✗"}
DECISIONS = ("skip", "trigger")


def accuracy_per_100k_tokens(accuracy_pct: float | None,
                             tokens_per_question: float | None) -> float | None:
    """ApT = accuracy (%) / (tokens per question / 100,000); None when either is unknown or
    no token was spent."""
    if accuracy_pct is None or not tokens_per_question:
        return None
    return accuracy_pct * 100_000 / tokens_per_question


def decision_breakdown(outcomes: Sequence[QuestionOutcome]) -> dict[str, Any]:
    """The paper's skip/trigger × transition counts, with trigger rate and derived shares."""
    cells = {decision: dict.fromkeys(TRANSITIONS, 0) for decision in DECISIONS}
    undecided = 0
    for outcome in outcomes:
        if outcome.escalated is None:
            undecided += 1
            continue
        first = "right" if outcome.single_correct else "wrong"
        second = "right" if outcome.correct else "wrong"
        cells["trigger" if outcome.escalated else "skip"][f"{first}_to_{second}"] += 1
    triggered, skipped = sum(cells["trigger"].values()), sum(cells["skip"].values())
    decided = triggered + skipped
    single_right = sum(cells[d]["right_to_right"] + cells[d]["right_to_wrong"] for d in DECISIONS)
    return {
        **cells, "undecided": undecided, "triggered": triggered, "skipped": skipped,
        "trigger_rate": triggered / decided if decided else None,
        "single_agent_accuracy": single_right / decided if decided else None,
        "fixed_share_of_triggers": cells["trigger"]["wrong_to_right"] / triggered
        if triggered else None,
        "broken_share_of_triggers": cells["trigger"]["right_to_wrong"] / triggered
        if triggered else None,
    }


def summarise(outcomes: Sequence[QuestionOutcome], *, selective: bool) -> dict[str, Any]:
    """Accuracy, cost and failures of one method on one dataset (module docstring)."""
    n = len(outcomes)
    correct = sum(o.correct for o in outcomes)
    prompt = sum(o.prompt_tokens for o in outcomes)
    completion = sum(o.completion_tokens for o in outcomes)
    accuracy_pct = 100.0 * correct / n if n else None
    tokens_per_question = (prompt + completion) / n if n else None
    kinds = Counter(o.error.split(":", 1)[0] for o in outcomes if o.error)
    summary: dict[str, Any] = {
        "questions": n, "correct": correct,
        "accuracy": correct / n if n else None, "accuracy_pct": accuracy_pct,
        "prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": prompt + completion, "tokens_per_question": tokens_per_question,
        "apt": accuracy_per_100k_tokens(accuracy_pct, tokens_per_question),
        "messages_per_question": sum(o.messages for o in outcomes) / n if n else None,
        "calls_per_question": sum(o.calls for o in outcomes) / n if n else None,
        "model_seconds_per_question": sum(o.model_seconds for o in outcomes) / n if n else None,
        "failures": sum(kinds.values()), "failure_kinds": dict(sorted(kinds.items())),
        "failed_calls": sum(o.failed_calls for o in outcomes),
    }
    if selective:
        summary["decisions"] = decision_breakdown(outcomes)
    return summary


def versus_full_mad(method: Mapping[str, Any], full_mad: Mapping[str, Any]) -> dict[str, Any]:
    """A method's tokens as a share of full MAD's, its accuracy difference, and the goal."""
    mad_tokens = full_mad["tokens_per_question"]
    ratio = method["tokens_per_question"] / mad_tokens if mad_tokens else None
    delta = None
    if method["accuracy_pct"] is not None and full_mad["accuracy_pct"] is not None:
        delta = method["accuracy_pct"] - full_mad["accuracy_pct"]
    return {"tokens_ratio": ratio, "accuracy_delta_pct": delta, "token_goal": TOKEN_GOAL,
            "goal_met": None if ratio is None or delta is None
            else bool(ratio <= TOKEN_GOAL and delta >= 0)}


def mean_over_datasets(datasets: Mapping[str, Mapping[str, Mapping[str, Any]]],
                       methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per method, the unweighted mean over datasets of accuracy and tokens per question (the
    paper's "mean over six datasets"), and the ApT of those means."""
    mean: dict[str, dict[str, Any]] = {}
    for method in methods:
        rows = [d[method] for d in datasets.values() if d.get(method)]
        accuracy = [r["accuracy_pct"] for r in rows if r["accuracy_pct"] is not None]
        tokens = [r["tokens_per_question"] for r in rows if r["tokens_per_question"] is not None]
        row = {"datasets": len(rows),
               "accuracy_pct": sum(accuracy) / len(accuracy) if accuracy else None,
               "tokens_per_question": sum(tokens) / len(tokens) if tokens else None}
        row["apt"] = accuracy_per_100k_tokens(row["accuracy_pct"], row["tokens_per_question"])
        mean[method] = row
    return mean
