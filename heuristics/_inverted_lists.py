"""Inverted lists of the three-phase algorithm (l-diversity paper, §5.5).

QI-groups and the residue set ``R`` are multisets of SA values (§5.1: tuples with equal QI
and SA values are interchangeable), so the lists hold SA values and their counts
``h(Q, v)``; the caller maps counts back to rows at the end.

* :class:`PillarLists` is the array ``A_i`` of one multiset: ``A_i[j]`` holds the SA values
  ``v`` with ``h(Q, v) = j``, and ``p_i`` (:attr:`PillarLists.height`) points at the pillars.
  Moving one tuple in or out costs O(1): ``p_i`` moves by at most one step per update.
* :class:`CandidateList` is the candidate list ``C`` of phase two: ``C[j]`` holds the alive
  SA values ``v`` with ``h(R, v) = j``, and each value keeps the QI-groups holding it in
  increasing order. Values move from ``C[j]`` to ``C[j + 1]`` in O(1) as ``R`` grows; a
  QI-group found dead, or without ``v``, is dropped from ``v``'s list when met, which is
  final because in phase two a dead group stays dead and counts only decrease.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np


class PillarLists:
    """The inverted list ``A`` of one multiset of SA values, with its pillar pointer."""

    __slots__ = ("buckets", "count", "height", "size")

    def __init__(self, counts: Mapping[int, int] | Iterable[tuple[int, int]] = ()) -> None:
        items = counts.items() if isinstance(counts, Mapping) else counts
        #: h(Q, v) for every value present (count > 0).
        self.count: dict[int, int] = {}
        #: A[j]: the values with count j (only non-empty buckets are stored).
        self.buckets: dict[int, set[int]] = {}
        self.size = 0
        self.height = 0
        for value, number in items:
            if number > 0:
                self.count[value] = int(number)
                self.buckets.setdefault(int(number), set()).add(value)
                self.size += int(number)
                self.height = max(self.height, int(number))

    def __getitem__(self, value: int) -> int:
        return self.count.get(value, 0)

    def pillars(self) -> set[int]:
        """The pillar SA values (count equal to the pillar height); empty for an empty set."""
        return self.buckets.get(self.height, set()) if self.height else set()

    def remove(self, value: int) -> None:
        """Take one tuple of ``value`` out (its count must be positive)."""
        current = self.count[value]
        bucket = self.buckets[current]
        bucket.discard(value)
        if not bucket:
            del self.buckets[current]
        if current == 1:
            del self.count[value]
        else:
            self.count[value] = current - 1
            self.buckets.setdefault(current - 1, set()).add(value)
        self.size -= 1
        if current == self.height and current not in self.buckets:
            # The value now sits at current - 1 (or the set is empty), so one step suffices.
            self.height = current - 1

    def add(self, value: int) -> None:
        """Put one tuple of ``value`` in."""
        current = self.count.get(value, 0)
        if current:
            bucket = self.buckets[current]
            bucket.discard(value)
            if not bucket:
                del self.buckets[current]
        self.count[value] = current + 1
        self.buckets.setdefault(current + 1, set()).add(value)
        self.size += 1
        self.height = max(self.height, current + 1)

    def is_eligible(self, l: int) -> bool:  # noqa: E741
        """``|S| >= l * h(S)`` (Definition 2; the empty set is l-eligible)."""
        return self.size >= l * self.height

    def is_thin(self, l: int) -> bool:  # noqa: E741
        return self.size == l * self.height

    def is_fat(self, l: int) -> bool:  # noqa: E741
        return self.size >= l * self.height + 1

    def vector(self, m: int) -> tuple[int, ...]:
        """Dense count vector over values ``0 .. m-1`` (the paper's vector notation)."""
        return tuple(self.count.get(v, 0) for v in range(m))


class CandidateList:
    """The candidate list ``C`` of phase two, organised by value (see module docstring).

    ``pair_value``/``pair_group`` list the (QI-group, SA value) pairs of the QI-groups alive
    when phase two starts, sorted by value then group.
    """

    def __init__(
        self, pair_value: np.ndarray, pair_group: np.ndarray, residue: PillarLists
    ) -> None:
        values, starts = np.unique(pair_value, return_index=True)
        ends = np.append(starts[1:], len(pair_value)).astype(np.int64)[: len(starts)]
        self._groups: dict[int, list[int]] = {
            int(v): pair_group[s:e].tolist() for v, s, e in zip(values, starts, ends, strict=True)
        }
        self._next: dict[int, int] = {int(v): 0 for v in values}
        self._level: dict[int, int] = {}
        self.buckets: dict[int, set[int]] = {}
        for v in self._groups:
            level = residue[v]
            self._level[v] = level
            self.buckets.setdefault(level, set()).add(v)
        self._lowest = min(self.buckets, default=0)

    def lowest_value(self) -> int | None:
        """The alive value with the fewest tuples in ``R`` (smallest value on ties)."""
        while self.buckets:
            bucket = self.buckets.get(self._lowest)
            if bucket:
                return min(bucket)
            self.buckets.pop(self._lowest, None)
            self._lowest += 1
        return None

    def raise_value(self, value: int) -> None:
        """``h(R, value)`` grew by one: move ``value`` from ``C[j]`` to ``C[j + 1]``."""
        level = self._level.get(value)
        if level is None:
            return
        bucket = self.buckets[level]
        bucket.discard(value)
        if not bucket:
            del self.buckets[level]
        self._level[value] = level + 1
        self.buckets.setdefault(level + 1, set()).add(value)

    def first_group(self, value: int) -> int | None:
        """The lowest-numbered QI-group still listed for ``value`` (None when exhausted)."""
        groups = self._groups[value]
        position = self._next[value]
        return groups[position] if position < len(groups) else None

    def drop_first_group(self, value: int) -> None:
        """The first listed QI-group of ``value`` is dead or has lost all its ``value``."""
        self._next[value] += 1

    def discard(self, value: int) -> None:
        """``value`` is no longer alive."""
        level = self._level.pop(value)
        bucket = self.buckets[level]
        bucket.discard(value)
        if not bucket:
            del self.buckets[level]
