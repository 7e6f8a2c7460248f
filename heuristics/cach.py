"""Cach partial publication (Khan et al.'s (τ, m)-slicedBucket, as summarized in the
m-eligibility paper, §I and §II, reference [18]).

One new tuple per sensitive value is held back in a Cach table. When the new rows of a
release are not m-eligible, Cach tuples are published again to make them so, each at most
once: a held-back tuple of the least frequent value lowers the excess of the most frequent
one. The m-eligibility paper shows (§III, Proposition 1 and the Cach discussion) that one
tuple per value cannot always suffice; what Cach leaves unfixed here gets Algorithm 1's
counterfeits (:func:`republish.heuristics.eligibility.minimal_superset`), so the policy
always publishes. Per release: drop Cach tuples no longer in the table, top the Cach up
with one leftover new row per value it lacks (random), publish Cach tuples while they
help, then counterfeits. The Cach rows still held back are the release's deferrals.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from republish.heuristics.count_series import EligibilityDecision
from republish.heuristics.eligibility import minimal_superset
from republish.problems.eligibility import is_m_eligible

__all__ = ["CachPolicy", "release_from_cach"]


def release_from_cach(counts: Mapping[str, int], cached: Sequence[str], m: int) -> list[str]:
    """Values of the Cach tuples to publish (each value at most once): the least frequent
    value of ``counts`` that has a Cach tuple, while the counts are not m-eligible and the
    tuple lowers ``m * max - |T|``."""
    current = {v: int(c) for v, c in counts.items()}
    left = sorted(set(cached))
    used: list[str] = []
    while left and not is_m_eligible(current, m):
        top = max(current.values(), default=0)
        value = min(left, key=lambda v: (current.get(v, 0), v))
        if current.get(value, 0) + 1 > top:
            break  # it would become the most frequent value: no gain
        current[value] = current.get(value, 0) + 1
        used.append(value)
        left.remove(value)
    return used


@dataclass
class CachPolicy:
    """The Cach policy for :func:`republish.heuristics.count_series.run_count_series`
    (stateful: the Cach persists across releases)."""

    name: str = "cach"
    cach: dict[str, Hashable] = field(default_factory=dict)

    def decide(self, leftover: Mapping[str, list[Hashable]], m: int, domain: Sequence[str],
               rng: np.random.Generator) -> EligibilityDecision:
        present = {i for rows in leftover.values() for i in rows}
        self.cach = {v: i for v, i in self.cach.items() if i in present}
        rows = {v: list(r) for v, r in leftover.items()}
        for value in sorted(rows):
            candidates = [i for i in rows[value] if i != self.cach.get(value)]
            if value not in self.cach and candidates:
                self.cach[value] = candidates[int(rng.integers(len(candidates)))]
        held = set(self.cach.values())
        counts = {v: sum(1 for i in r if i not in held) for v, r in rows.items()}
        counts = {v: c for v, c in counts.items() if c}
        for value in release_from_cach(counts, list(self.cach), m):
            held.discard(self.cach.pop(value))
            counts[value] = counts.get(value, 0) + 1
        counterfeits: dict[str, int] = {}
        if counts and not is_m_eligible(counts, m):
            absent = [v for v in domain if counts.get(v, 0) == 0]
            solution = minimal_superset(counts, m, allow_new_values=True, new_values=absent)
            counterfeits = {v: int(c) for v, c in solution.counterfeits.items() if c}
        published = tuple(i for r in rows.values() for i in r if i not in held)
        return EligibilityDecision(published, tuple(sorted(held, key=str)), counterfeits)
