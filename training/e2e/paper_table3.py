"""The iMAD paper's end-to-end numbers, as reference beside ours.

Measured by the paper's authors with Gemini 2.0 Flash — a different, far larger model than
ours — and with MAD as iMAD's debate, so they show the shape of the trade-off, not a target
in absolute terms. Copied exactly from the two sources this repository holds:

- SPEC §11, which quotes the paper's mean over its six datasets;
- `papers/imad.txt`, the paper summary (Results section), which quotes single cells.

The summary does not reproduce the paper's full results table (Table 3) or define ApT; only
the numbers below are available here, and ApT for them is computed with our definition
(`training.e2e.metrics.accuracy_per_100k_tokens`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

PAPER = "Fan, Yoon & Ji, iMAD: Intelligent Multi-Agent Debate (AAAI 2026, arXiv 2511.11306)"
PAPER_MODEL = "Gemini 2.0 Flash"
SPEC_SOURCE = "SPEC §11 (reference numbers quoted from the iMAD paper)"
SUMMARY_SOURCE = "papers/imad.txt (summary of the iMAD paper, Results section)"


@dataclass(frozen=True)
class PaperRow:
    """One method's accuracy and tokens per question in the paper (None: not given)."""

    method: str
    """The paper's method name."""
    ours: tuple[str, ...]
    """Our methods (`E2E_METHODS` names) it corresponds to; () when we do not run it."""
    accuracy_pct: float | None
    tokens_per_question: float | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ours": list(self.ours)}


MEAN_OF_SIX = (
    PaperRow("CoT", ("cot",), 81.1, 1324, SPEC_SOURCE),
    PaperRow("full MAD", ("mad",), 84.7, 5701, SPEC_SOURCE),
    PaperRow("DOWN", ("down",), 82.3, 1833, SPEC_SOURCE),
    PaperRow("iMAD", ("imad_acemad", "imad_svrmad"), 86.4, 2053, SPEC_SOURCE),
)
"""Mean over the paper's six datasets."""

DATASET_ROWS: dict[str, tuple[PaperRow, ...]] = {
    "medqa": (
        PaperRow("iMAD", ("imad_acemad", "imad_svrmad"), 82.0, 1300, SUMMARY_SOURCE),
        PaperRow("MAD (Liang et al.)", (), 81.9, None, SUMMARY_SOURCE),
        PaperRow("GroupDebate", (), None, 16832, SUMMARY_SOURCE),
    ),
    "gsm8k": (
        PaperRow("CoT", ("cot",), 71.3, None, SUMMARY_SOURCE),
        PaperRow("iMAD", ("imad_acemad", "imad_svrmad"), 84.8, None, SUMMARY_SOURCE),
        PaperRow("MAD (Liang et al.)", (), 76.4, None, SUMMARY_SOURCE),
    ),
    "okvqa": (
        PaperRow("DOWN", ("down",), 88.1, None, SUMMARY_SOURCE),
        PaperRow("iMAD", ("imad_acemad", "imad_svrmad"), 90.3, None, SUMMARY_SOURCE),
    ),
}
"""Single cells the summary quotes, by our dataset name (OKVQA is not one of ours)."""

QUOTES: dict[str, tuple[tuple[str, str], ...]] = {
    "medqa": (
        ("MEDQA 82.0% vs. MAD 81.9% at 68% fewer tokens", SUMMARY_SOURCE),
        ("vs. GroupDebate on MEDQA: 16,832 → 1,300", SUMMARY_SOURCE),
        ("vs. Self-Consistency (SC): iMAD reduces tokens by 62.7% on MEDQA while gaining +4.7% "
         "accuracy", SUMMARY_SOURCE),
    ),
    "gsm8k": (("GSM8K: 71.3% → 84.8%", SUMMARY_SOURCE),
              ("GSM8K 84.8% vs. MAD 76.4%", SUMMARY_SOURCE)),
    "okvqa": (("OKVQA DOWN=88.1% vs. iMAD=90.3%", SUMMARY_SOURCE),),
    "decisions": (
        ("up to 95.9% of iMAD's debate decisions are beneficial; harmful flips (✓→✗ when "
         "triggered) remain ~5–10% across datasets", SUMMARY_SOURCE),
        ("Up to 95.9% of its decisions beneficial; trigger rate 4–22%.", SPEC_SOURCE),
    ),
}
"""The sources' words, verbatim, with where each comes from, for the report."""


def reference() -> dict[str, Any]:
    """Everything above as one JSON-able dict."""
    return {"paper": PAPER, "model": PAPER_MODEL,
            "mean_of_six": [row.to_dict() for row in MEAN_OF_SIX],
            "datasets": {name: [row.to_dict() for row in rows]
                         for name, rows in DATASET_ROWS.items()},
            "quotes": {name: [{"quote": quote, "source": source} for quote, source in lines]
                       for name, lines in QUOTES.items()}}
