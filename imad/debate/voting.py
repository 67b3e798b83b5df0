"""Majority vote with deterministic tie-breaking, shared by every back-end that votes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def majority_vote(answers: Sequence[str], tie_break: Sequence[str] = ()) -> str:
    """The most common non-empty answer ("" when there is none).

    Ties go to the answer most common in `tie_break` (e.g. SVR-MAD's pre-debate answers), then
    to the tied answer that occurs first in `answers` — agent order, never string order, so no
    option letter is favoured.
    """
    counts = Counter(a for a in answers if a)
    if not counts:
        return ""
    best = max(counts.values())
    tied = [a for a in dict.fromkeys(answers) if a and counts[a] == best]
    if len(tied) > 1 and tie_break:
        secondary = Counter(a for a in tie_break if a)
        top = max(secondary[a] for a in tied)
        tied = [a for a in tied if secondary[a] == top]
    return tied[0]


def vote_share(answers: Sequence[str]) -> tuple[str, int]:
    """The most common non-empty answer and how many agents gave it."""
    counts = Counter(a for a in answers if a)
    if not counts:
        return "", 0
    answer = majority_vote(answers)
    return answer, counts[answer]
