"""Decision rows for the log's tests: seeded, with scores that vary and labels that follow p."""

from __future__ import annotations

import random
from typing import Any

T0 = 1_796_000_000.0  # 2026-11-30, a fixed clock so windows and --since are reproducible


def decision_row(index: int, *, rng: random.Random | None = None, model: str = "gpt-x",
                 time: float | None = None, shadow: bool = False) -> dict[str, Any]:
    """One complete row of the interim column list (`imad.decision_log.columns`)."""
    rng = rng or random.Random(index)
    p = rng.random()
    would = p < 0.6
    return {
        "response_id": f"chatcmpl-{index:06d}",
        "time": T0 + index * 60.0 if time is None else time,
        "served_model": model, "router_name": "imad-router-v2", "router_version": "2",
        "router_hash": "ab" * 32, "certificate": None, "calibrator": "identity", "policy_rule": "fixed",
        "tau": 0.6, "tau_source": "checkpoint", "raw": p, "p": p, "uncertainty": 0.1,
        "ood_score": 3.0, "ood": index % 10 == 0, "ood_policy": "flag",
        "outcome": "below_tau" if would else "kept",
        "escalated": would and not shadow, "would_escalate": would if shadow else None,
        "reasons": [f"p {p:.2f} vs τ 0.60"], "features": {"q_tokens": 12.0, "a_len": 3.0},
        "critique_prompt_tokens": 420, "critique_completion_tokens": 80,
        "debate_prompt_tokens": 0, "debate_completion_tokens": 0,
        "backend": "svrmad", "upstream_model": "echo", "error": None,
        "question": f"question {index}?",
        "single_answer": "A" if index % 3 else "B", "debate_answer": "B" if shadow else None,
        "served": "single_agent" if (shadow or not would) else "debate", "shadow_debate": shadow,
        "confidence_initial": rng.random(),
    }


def labelled_rows(count: int, seed: int = 0, **kwargs: Any) -> list[tuple[dict[str, Any], bool]]:
    """`count` rows with a label that is right with probability p (so the router ranks)."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        row = decision_row(index, rng=rng, **kwargs)
        rows.append((row, rng.random() < row["p"]))
    return rows


def write_log(path: Any, count: int) -> Any:
    """A decision log at `path` holding `decision_row(0 … count-1)`; the path."""
    from imad.decision_log import DecisionLog

    with DecisionLog(path) as writer:
        for index in range(count):
            writer.record(decision_row(index))
    return path
