"""Seeded, stratified question order for `--limit` on datasets with many subjects or tasks.

The first N questions of MMLU are all abstract algebra and the first N of BBH all boolean
expressions, so `limit=N` must not mean "the first N". `stratified_order` returns every
question in an order whose every prefix is a proportional, seeded, stratified sample:

- within each stratum (subject, task, category…) the questions are shuffled with the seed;
- the k-th question of a stratum of size n gets the position (k + offset) / n, where `offset`
  is a seeded uniform number per stratum; all questions are sorted by position.

So the first N hold about N · n_s / total questions of each stratum s (systematic sampling),
and the sample for a larger N contains the sample for a smaller one: `--limit 5` and later
`--limit 200` share their first 5 questions, and the corpus cache answers those for free.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from imad.question import Question

SAMPLE_SEED = 0
"""The seed every built-in loader samples with, so `--limit N` picks the same N everywhere."""


def stratified_order(questions: Sequence[Question], stratum: Callable[[Question], str],
                     seed: int = SAMPLE_SEED) -> list[Question]:
    """All `questions`, ordered so that each prefix is a stratified sample (module docstring)."""
    rng = random.Random(seed)
    groups: dict[str, list[int]] = {}
    for index, question in enumerate(questions):
        groups.setdefault(stratum(question), []).append(index)
    keyed: list[tuple[float, str, int]] = []
    for name in sorted(groups):
        members = groups[name]
        rng.shuffle(members)
        offset = rng.random()
        keyed.extend(((rank + offset) / len(members), name, index) for rank, index in enumerate(members))
    keyed.sort()
    return [questions[index] for _, _, index in keyed]


def take_sample(questions: Sequence[Question], limit: int | None,
                stratum: Callable[[Question], str], seed: int = SAMPLE_SEED) -> list[Question]:
    """All questions in file order when `limit` is None, else the first `limit` of the
    stratified order."""
    if limit is None:
        return list(questions)
    return stratified_order(questions, stratum, seed)[:limit]
