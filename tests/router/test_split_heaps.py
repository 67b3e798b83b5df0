"""SplitHeaps, the order-statistics multiset behind TriggerBudget: equal to a sorted list."""

from __future__ import annotations

import numpy as np
import pytest

from imad.decide.split_heaps import SplitHeaps


@pytest.mark.parametrize("seed", range(3))
def test_split_heaps_match_a_sorted_list_under_adds_removes_and_rank_jumps(seed):
    rng = np.random.default_rng(seed)
    heaps, reference = SplitHeaps(), []
    for _ in range(3_000):
        if reference and rng.uniform() < 0.45:
            value = reference[int(rng.integers(len(reference)))]
            heaps.remove(value)
            reference.remove(value)
        else:
            value = float(rng.integers(0, 20)) / 20  # many ties
            heaps.add(value)
            reference.append(value)
        reference.sort()
        assert len(heaps) == len(reference)
        if reference:
            k = int(rng.integers(len(reference)))  # any rank, not only neighbouring ones
            assert heaps.kth(k) == reference[k]
    assert heaps.values() == reference
