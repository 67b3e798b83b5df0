"""A multiset of floats with add, remove and the k-th smallest in O(log n) (amortised).

`imad.decide.budget.TriggerBudget` keeps its window of router scores here: τ is an order
statistic of the window, and an update moves τ's rank by about one, so two heaps split at that
rank make each update and each τ O(log window) where a sorted list costs O(window).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable


class SplitHeaps:
    """A multiset of floats with add, remove and the k-th smallest in O(log n) amortised.

    Two heaps split the values: `low` (a max-heap, stored negated) holds the smallest, `high` the
    rest, and every live value in `low` is ≤ every live value in `high`. The k-th smallest is the
    top of `low` once `low` holds k + 1 values; moving the split by one costs O(log n), and τ's
    rank moves by about one per answer. A removed value is only counted (lazy removal) and
    dropped when it reaches a top; the heaps are rebuilt when dead values outnumber live ones,
    so memory stays O(window).
    """

    def __init__(self, values: Iterable[float] = ()) -> None:
        ordered = sorted(values)
        self._low: list[float] = []
        self._high: list[float] = ordered  # a sorted list is a valid min-heap
        self._low_size, self._high_size = 0, len(ordered)
        self._dead_low: dict[float, int] = {}
        self._dead_high: dict[float, int] = {}
        self._dead = 0

    def __len__(self) -> int:
        return self._low_size + self._high_size

    def add(self, value: float) -> None:
        if self._low_size and value <= self._low_top():
            heapq.heappush(self._low, -value)
            self._low_size += 1
        else:
            heapq.heappush(self._high, value)
            self._high_size += 1

    def remove(self, value: float) -> None:
        """Remove one copy of `value`, which must be present."""
        if self._low_size and value <= self._low_top():
            self._dead_low[value] = self._dead_low.get(value, 0) + 1
            self._low_size -= 1
        else:
            self._dead_high[value] = self._dead_high.get(value, 0) + 1
            self._high_size -= 1
        self._dead += 1
        if self._dead > len(self) + 64:
            self._compact()

    def kth(self, k: int) -> float:
        """The k-th smallest value (0-based), 0 ≤ k < len(self)."""
        while self._low_size > k + 1:
            self._clean_low()
            heapq.heappush(self._high, -heapq.heappop(self._low))
            self._low_size, self._high_size = self._low_size - 1, self._high_size + 1
        while self._low_size < k + 1:
            self._clean_high()
            heapq.heappush(self._low, -heapq.heappop(self._high))
            self._low_size, self._high_size = self._low_size + 1, self._high_size - 1
        return self._low_top()

    def values(self) -> list[float]:
        """The live values, sorted."""
        self._compact()
        return sorted([-v for v in self._low] + self._high)

    def _low_top(self) -> float:
        self._clean_low()
        return -self._low[0]

    def _clean_low(self) -> None:
        while self._low and self._dead_low.get(-self._low[0]):
            _discount(self._dead_low, -heapq.heappop(self._low))
            self._dead -= 1

    def _clean_high(self) -> None:
        while self._high and self._dead_high.get(self._high[0]):
            _discount(self._dead_high, heapq.heappop(self._high))
            self._dead -= 1

    def _compact(self) -> None:
        self._low = [-v for v in _drop(self._dead_low, [-v for v in self._low])]
        self._high = _drop(self._dead_high, self._high)
        heapq.heapify(self._low)
        heapq.heapify(self._high)
        self._dead = 0


def _discount(counts: dict[float, int], value: float) -> None:
    if counts[value] == 1:
        del counts[value]
    else:
        counts[value] -= 1


def _drop(dead: dict[float, int], values: list[float]) -> list[float]:
    """`values` without the dead copies counted in `dead` (which ends empty)."""
    kept = []
    for value in values:
        if dead.get(value):
            _discount(dead, value)
        else:
            kept.append(value)
    return kept
