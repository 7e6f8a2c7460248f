"""Assignment phase of the ε-inclusion algorithm on counts (ε-inclusion paper, Algorithm 1,
lines 3-16).

:func:`greedy_plan` applies the four rules to counts per cluster type and value (an
:class:`AssignmentPlan`, which the exact model of :mod:`republish.models.eps_assignment`
can replace); :func:`max_new_clusters` and :func:`compose_new_clusters` size and compose
the new ε-distinct clusters of rule 3. See :mod:`republish.heuristics.eps_inclusion` for
the whole algorithm.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from republish.errors import ParameterError
from republish.heuristics.eps_inclusion.division import ClusterType
from republish.problems.eps_plan import PlanCounts

__all__ = ["AssignmentPlan", "compose_new_clusters", "greedy_plan", "max_new_clusters"]


@dataclass(frozen=True)
class AssignmentPlan(PlanCounts):
    """Counts of the assignment phase (the fields of
    :class:`republish.problems.eps_plan.PlanCounts`), with the lexicographic cost that
    compares plans."""

    def substitutions(self, types: Sequence[ClusterType]) -> int:
        return sum(
            len(t.missing) * k - sum(f.values())
            for t, k, f in zip(types, self.kept, self.fills, strict=True)
        )

    def deferred_rows(self, types: Sequence[ClusterType]) -> int:
        dropped = sum((t.multiplicity - k) * t.members
                      for t, k in zip(types, self.kept, strict=True))
        return dropped + sum(self.deferred.values())

    def objective(self, types: Sequence[ClusterType]) -> tuple[int, int, int, int]:
        """Lexicographic cost: (deferred rows, substitutions, extras, −new clusters)."""
        return (self.deferred_rows(types), self.substitutions(types),
                sum(self.extras.values()), -self.new_clusters)


def _category_capacity(remaining: np.ndarray, category: np.ndarray, tau: int) -> np.ndarray:
    """Per category, the largest ``z`` with ``Σ_v min(r_v, z) ≥ τ z``: how many clusters the
    category can give ``τ`` distinct values each."""
    capacity = np.zeros(int(category.max()) + 1 if len(category) else 0, dtype=np.int64)
    for c in range(len(capacity)):
        counts = remaining[category == c]
        low, high = 0, int(counts.sum()) // tau
        while low < high:  # Σ min(r, z) − τz is concave and 0 at 0
            mid = (low + high + 1) // 2
            if int(np.minimum(counts, mid).sum()) >= tau * mid:
                low = mid
            else:
                high = mid - 1
        capacity[c] = low
    return capacity


def max_new_clusters(remaining: np.ndarray, category: np.ndarray, lam: int, tau: int) -> int:
    """Largest ``N`` such that rows ``remaining`` (per value) fill ``N`` ε-distinct
    clusters, each value at most once per cluster: ``Σ_c min(N, z_c) ≥ λN``."""
    remaining = np.asarray(remaining, dtype=np.int64)
    if remaining.sum() == 0:
        return 0
    capacity = _category_capacity(remaining, np.asarray(category), tau)
    low, high = 0, int(remaining.sum()) // (lam * tau)
    while low < high:
        mid = (low + high + 1) // 2
        if int(np.minimum(capacity, mid).sum()) >= lam * mid:
            low = mid
        else:
            high = mid - 1
    return low


def _take_substitutes(
    after: np.ndarray, allowed: list[int], needed: int, per_value: int
) -> dict[int, int] | None:
    """``needed`` rows, at most ``per_value`` per value, from the most frequent values."""
    heap = [(-int(after[w]), w) for w in allowed if after[w] > 0]
    heapq.heapify(heap)
    taken: dict[int, int] = {}
    for _ in range(needed):
        while heap and taken.get(heap[0][1], 0) >= per_value:
            heapq.heappop(heap)
        if not heap:
            return None
        count, w = heapq.heappop(heap)
        taken[w] = taken.get(w, 0) + 1
        if count + 1 < 0:
            heapq.heappush(heap, (count + 1, w))
    return taken


def greedy_plan(
    types: Sequence[ClusterType],
    supply: np.ndarray,
    category: np.ndarray,
    lam: int,
    tau: int,
    allow_extras: bool = True,
) -> AssignmentPlan:
    """Algorithm 1's assignment on counts (rules 1-4, see
    :mod:`republish.heuristics.eps_inclusion`).

    ``supply[v]`` counts the new rows of value ``v``; ``category[v]`` is its category.
    ``allow_extras=False`` defers the rows that fit no new cluster instead of adding them
    to old clusters (line 15), whose old rows may expose them (docs/eps_inclusion.md).
    """
    if lam < 1 or tau < 1:
        raise ParameterError(f"lambda={lam}, tau={tau}: both must be at least 1.")
    remaining = np.asarray(supply, dtype=np.int64).copy()
    values = len(remaining)
    kept = [t.multiplicity for t in types]
    fills: list[dict[int, int]] = [{} for _ in types]
    substitutes: list[dict[int, int]] = [{} for _ in types]
    # Rule 1 for every cluster first: a substitute must not take a row another cluster
    # could have used to fill its missing value.
    for index, kind in enumerate(types):
        for v in sorted(kind.missing):
            count = min(kind.multiplicity, int(remaining[v]))
            if count:
                fills[index][v] = count
                remaining[v] -= count
    for index, kind in enumerate(types):
        if not kind.missing:
            continue
        allowed = [w for w in range(values) if w not in kind.present]
        for keep in range(kind.multiplicity, -1, -1):
            # Dropping clusters (their rows deferred) gives their fills back.
            fill = {v: min(keep, c) for v, c in fills[index].items() if min(keep, c) > 0}
            after = remaining.copy()
            for v, c in fills[index].items():
                after[v] += c - fill.get(v, 0)
            needed = len(kind.missing) * keep - sum(fill.values())
            taken = _take_substitutes(after, allowed, needed, keep) if needed else {}
            if taken is not None:
                for w, c in taken.items():
                    after[w] -= c
                kept[index], fills[index], substitutes[index] = keep, fill, taken
                remaining = after
                break
    clusters = max_new_clusters(remaining, category, lam, tau)
    new_rows = np.minimum(remaining, clusters)
    excess = remaining - new_rows
    room = np.zeros(values, dtype=np.int64)
    for kind, keep, taken in zip(types, kept, substitutes, strict=True):
        for v in range(values):
            if v not in kind.present:
                room[v] += keep - taken.get(v, 0)
    extras = np.minimum(excess, room) if allow_extras else np.zeros_like(excess)
    deferred = excess - extras
    return AssignmentPlan(
        kept=tuple(kept),
        fills=tuple(fills),
        substitutes=tuple(substitutes),
        extras={v: int(c) for v, c in enumerate(extras) if c},
        new_rows={v: int(c) for v, c in enumerate(new_rows) if c},
        new_clusters=int(clusters),
        deferred={v: int(c) for v, c in enumerate(deferred) if c},
    )


def compose_new_clusters(
    new_rows: Mapping[int, int], clusters: int, category: np.ndarray, lam: int, tau: int
) -> list[list[int]]:
    """Values of each of ``clusters`` new ε-distinct clusters holding ``new_rows[v]`` rows
    of every value ``v`` (each at most ``clusters``).

    Category ``c`` qualifies in a window of ``z_c`` consecutive clusters (mod ``N``), dealt
    one after another around the circle, so every cluster lies in at least ``λ`` windows
    when ``Σ z_c ≥ λN``; a window gets the category's values cyclically (``≥ τ`` distinct
    each), copies beyond the window go to the smallest clusters lacking the value.
    """
    if clusters == 0:
        if any(new_rows.values()):
            raise ParameterError("rows for new clusters but no new cluster.")
        return []
    counts = np.zeros(len(category), dtype=np.int64)
    for v, c in new_rows.items():
        counts[v] = c
    if counts.max(initial=0) > clusters:
        raise ParameterError("a value has more rows than there are new clusters.")
    capacity = np.minimum(_category_capacity(counts, np.asarray(category), tau), clusters)
    if int(capacity.sum()) < lam * clusters:
        raise ParameterError("the rows cannot fill that many ε-distinct clusters.")
    if tau == 1 and len(np.unique(category)) == len(category):
        return _blocks(counts, clusters, lam)
    members: list[set[int]] = [set() for _ in range(clusters)]
    sizes = np.zeros(clusters, dtype=np.int64)
    leftover: list[tuple[int, int]] = []
    pointer = 0
    for c in np.argsort(-capacity, kind="stable").tolist():
        z = int(capacity[c])
        own = [v for v in np.argsort(-counts, kind="stable").tolist()
               if category[v] == c and counts[v] > 0]
        if z == 0:
            leftover.extend((v, int(counts[v])) for v in own)
            continue
        window = [(pointer + i) % clusters for i in range(z)]
        pointer = (pointer + z) % clusters
        dealt = 0
        for v in own:
            inside = min(int(counts[v]), z)
            for _ in range(inside):
                target = window[dealt % z]
                members[target].add(v)
                sizes[target] += 1
                dealt += 1
            if counts[v] > inside:
                leftover.append((v, int(counts[v]) - inside))
    for v, count in leftover:
        lacking = np.array([v not in m for m in members])
        candidates = np.flatnonzero(lacking)
        chosen = candidates[np.argsort(sizes[candidates], kind="stable")[:count]]
        for target in chosen.tolist():
            members[target].add(v)
            sizes[target] += 1
    return [sorted(m) for m in members]


def _blocks(counts: np.ndarray, clusters: int, epsilon: int) -> list[list[int]]:
    """Compositions in blocks of clusters sharing one signature (every value its own
    category, ``τ = 1``), as the m-invariance paper's assignment (Fig. 3) builds buckets.

    Blocks of one signature absorb later deletions: a bucket that loses a row of every
    value shrinks by a cluster instead of needing fills or substitutions. Each step
    takes the ``g = ⌈Σ/N⌉`` most frequent values for ``α`` clusters, the largest ``α``
    keeping every value at most once per remaining cluster and ``Σ >= ε·N``.
    """
    counts = counts.copy()
    out: list[list[int]] = []
    left = clusters
    while left:
        total = int(counts.sum())
        size = -(-total // left)
        order = np.argsort(-counts, kind="stable")
        chosen, others = order[:size], order[size:]
        alpha = min(int(counts[chosen].min()), left - int(counts[others].max(initial=0)), left)
        if size > epsilon:
            alpha = min(alpha, (total - epsilon * left) // (size - epsilon))
        alpha = max(alpha, 1)
        signature = sorted(chosen.tolist())
        out.extend([signature] * alpha)
        counts[chosen] -= alpha
        left -= alpha
    return [list(s) for s in out]
