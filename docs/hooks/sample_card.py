"""Sample report cards for the manual, made at build time by `imad report`'s own code.

Two decision logs are seeded in a temporary folder: a week of shadow traffic whose labels follow
the router's p (a router with signal: the card a user hopes for) and the same traffic whose labels
ignore p (no signal: the card that says to keep debating, or to keep the old router). Their cards
are rendered with `imad.report` and put where a page says `<!-- generate: sample-card-signal -->`
or `<!-- generate: sample-card-no-signal -->`, so the manual shows what the code prints today.
The example label file, `docs/examples/labels.jsonl`, names decisions of these logs:
`tests/test_docs_examples.py` labels a seeded log with it through `imad log label`.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

ROWS = 1400
"""A week of 200 decisions a day: fewer per report window (a day) make its drift (PSI) noise."""
LABEL_EVERY = 8
"""Every eighth decision is labelled: a sample spread over the week, 175 labels."""
T0 = 1_795_996_800.0
"""2026-11-30 00:00 UTC: a fixed clock, so the cards' dates do not change between builds."""
STEP_S = 7 * 86_400 / ROWS
TAU = 0.6
SHADOW_DEBATE_EVERY = 5
"""Every fifth decision is also debated in shadow (`--shadow-debate-rate 0.2`)."""
SEED = 0


def decision_id(index: int) -> str:
    return f"chatcmpl-sample-{index:04d}"


def seeded_rows(*, signal: bool) -> list[tuple[dict[str, Any], bool, bool | None]]:
    """(log row, the served answer's label, the shadow debate's label or None) per decision.

    With `signal` an answer is right with probability p; without, with probability 0.3 whatever
    its p. A shadow debate keeps 90% of the right answers and fixes 40% of the wrong ones.
    """
    rng = random.Random(SEED)
    rows = []
    for index in range(ROWS):
        p = rng.betavariate(2.0, 2.0)
        correct = rng.random() < (p if signal else 0.3)
        debated = index % SHADOW_DEBATE_EVERY == 0
        debate_correct = rng.random() < (0.9 if correct else 0.4) if debated else None
        single = "A" if correct else "B"
        debate = ("A" if debate_correct else "B") if debated else None
        row = {
            "response_id": decision_id(index), "time": T0 + index * STEP_S,
            "served_model": "imad", "router_name": "imad-router-v2", "router_version": "2",
            "calibrator": "identity", "policy_rule": "fixed", "tau": TAU, "tau_source": "checkpoint",
            "raw": p, "p": p, "ood": rng.random() < 0.05, "ood_policy": "flag",
            "outcome": "below_tau" if p < TAU else "kept", "escalated": False,
            "would_escalate": p < TAU, "served": "single_agent", "shadow_debate": debated,
            "single_answer": single, "debate_answer": debate, "confidence_initial": rng.random(),
        }
        rows.append((row, correct, debate_correct))
    return rows


def seed_log(path: Path, *, signal: bool) -> Path:
    """A decision log at `path` holding `seeded_rows`, every `LABEL_EVERY`-th of them labelled."""
    from imad.decision_log import DecisionLog
    from imad.decision_log.labels import Label, set_label
    from imad.decision_log.location import open_for_reading

    rows = seeded_rows(signal=signal)
    with DecisionLog(path) as log:
        for row, _, _ in rows:
            log.record(row)
    store = open_for_reading(path, writable=True)
    try:
        for row, correct, debate_correct in rows[::LABEL_EVERY]:
            set_label(store, Label(row["response_id"], correct, "gold", debate_correct))
    finally:
        store.close()
    return path


def sample_card(*, signal: bool) -> dict[str, Any]:
    """The report card (`imad report --json`) of a seeded log, named `decisions.db`."""
    from imad.report import report_card

    with tempfile.TemporaryDirectory(prefix="imad-docs-card-") as folder:
        card = report_card(seed_log(Path(folder) / "decisions.db", signal=signal))
    card["log"] = "decisions.db"
    return card


def card_markdown(card: dict[str, Any], title: str) -> str:
    """`report.md` of `card` without its pictures, in an example box titled `title`; its headings
    become bold lines, so the page's table of contents lists the page's sections only."""
    from imad.report.markdown import render_markdown

    lines = [f"**{line.lstrip('#').strip()}**" if line.startswith("#") else line
             for line in render_markdown(card, {}).splitlines()]
    return f'!!! example "{title}"\n\n' + "\n".join(f"    {line}".rstrip() for line in lines) + "\n"


def signal_card() -> str:
    return card_markdown(sample_card(signal=True), "Sample card: labels that follow p (a router with signal)")


def no_signal_card() -> str:
    return card_markdown(sample_card(signal=False), "Sample card: labels that ignore p (no signal)")
