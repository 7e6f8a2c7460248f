"""Realization of an assignment plan row by row (ε-inclusion paper, Algorithm 1, lines 3-16).

:func:`realize_plan` turns the counts of an :class:`AssignmentPlan` into a cluster and a
published value per row, choosing among interchangeable new rows the ones nearest in a
k-d order of the QIs (:func:`locality_rank`) so that groups stay compact in QI space. See
:mod:`republish.heuristics.eps_inclusion` for the whole algorithm.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from republish.errors import ParameterError
from republish.heuristics.eps_inclusion.division import Clusters, ClusterType
from republish.heuristics.eps_inclusion.plan import AssignmentPlan, compose_new_clusters

__all__ = ["Placement", "locality_rank", "realize_plan"]


@dataclass(frozen=True)
class Placement:
    """Per row of ``T(n)``: its cluster (``-1`` deferred; old clusters first, then new
    ones) and the value code it is published with (its own unless a substitute)."""

    cluster: np.ndarray
    published: np.ndarray
    substituted: np.ndarray
    new_clusters: int


def locality_rank(points: np.ndarray, leaf_size: int = 32) -> np.ndarray:
    """Rank of every point in a k-d order (median splits on the widest side), so that
    points close in rank are close in QI space."""
    points = np.asarray(points, dtype=np.float64)
    n = len(points)
    order = np.empty(n, dtype=np.int64)
    filled = 0
    stack = [np.arange(n)]
    while stack:
        index = stack.pop()
        sub = points[index]
        spread = sub.max(axis=0) - sub.min(axis=0) if len(index) else np.zeros(1)
        widest = int(np.argmax(spread)) if len(spread) else 0
        if len(index) <= leaf_size or spread[widest] <= 0:
            leaf = index[np.argsort(sub[:, widest], kind="stable")] if len(index) else index
            order[filled:filled + len(leaf)] = leaf
            filled += len(leaf)
            continue
        half = len(index) // 2
        split = np.argpartition(sub[:, widest], half)
        stack.append(index[split[half:]])
        stack.append(index[split[:half]])
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return rank


class _NearestPool:
    """Items sorted by key; :meth:`take` removes the free item with the nearest key."""

    def __init__(self, keys: np.ndarray, items: np.ndarray) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys = np.asarray(keys, dtype=np.float64)[order].tolist()
        self.items = np.asarray(items)[order].tolist()
        n = len(self.items)
        self.right = list(range(n + 1))  # next free position >= i (n: none)
        self.left = list(range(n + 1))  # position p stands for item p - 1; 0: none
        self.free = n

    def _find(self, parent: list[int], i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def take(self, key: float) -> int:
        if self.free == 0:
            raise ParameterError("no item left in the pool.")
        position = bisect.bisect_left(self.keys, key)
        right = self._find(self.right, position)
        left = self._find(self.left, position) - 1  # shifted: index i+1 stands for item i
        n = len(self.items)
        if right == n or (left >= 0 and key - self.keys[left] <= self.keys[right] - key):
            chosen = left
        else:
            chosen = right
        self.right[chosen] = chosen + 1
        self.left[chosen + 1] = chosen
        self.free -= 1
        return int(self.items[chosen])

    def remaining(self) -> list[int]:
        out, i, n = [], self._find(self.right, 0), len(self.items)
        while i < n:
            out.append(int(self.items[i]))
            i = self._find(self.right, i + 1)
        return out


def realize_plan(
    clusters: Clusters,
    types: Sequence[ClusterType],
    plan: AssignmentPlan,
    new_rows: np.ndarray,
    values: np.ndarray,
    rank: np.ndarray,
    category: np.ndarray,
    lam: int,
    tau: int,
    rng: np.random.Generator,
) -> Placement:
    """Turn ``plan`` into row decisions; ``values``/``rank`` are indexed by row of ``T(n)``."""
    n = len(values)
    cluster = np.full(n, -1, dtype=np.int64)
    published = np.asarray(values, dtype=np.int64).copy()
    substituted = np.zeros(n, dtype=bool)
    new_rows = np.asarray(new_rows, dtype=np.int64)
    pools = {int(v): _NearestPool(rank[new_rows[values[new_rows] == v]],
                                  new_rows[values[new_rows] == v])
             for v in np.unique(values[new_rows]).tolist()}
    kept_clusters: list[int] = []
    substituted_in: list[set[int]] = [set() for _ in range(len(clusters))]
    for kind, keep, fill, taken in zip(types, plan.kept, plan.fills, plan.substitutes,
                                       strict=True):
        mine = list(kind.clusters[:keep])
        kept_clusters.extend(mine)
        for k in mine:
            cluster[clusters.rows[k]] = k
            for row, shown in clusters.kept_substitutes[k].items():
                published[row] = shown
                substituted[row] = True
        if not kind.missing or keep == 0:
            continue
        open_slots = {k: set(kind.missing) for k in mine}
        for v in sorted(fill, key=lambda v: -fill[v]):
            by_need = sorted(mine, key=lambda k: -len(open_slots[k]))
            for k in by_need[: fill[v]]:
                row = pools[v].take(clusters.rank[k])
                cluster[row] = k
                open_slots[k].discard(v)
        for w in sorted(taken, key=lambda w: -taken[w]):
            by_need = sorted(mine, key=lambda k: -len(open_slots[k]))[: taken[w]]
            for k in by_need:
                if not open_slots[k]:
                    raise ParameterError("substitutes do not match the open slots (bug).")
                row = pools[w].take(clusters.rank[k])
                cluster[row] = k
                published[row] = min(open_slots[k])
                open_slots[k].discard(int(published[row]))
                substituted[row] = True
                substituted_in[k].add(w)
    selected: list[int] = []
    first_new = len(clusters)
    for v, pool in pools.items():
        rest = np.asarray(pool.remaining(), dtype=np.int64)  # in rank order
        count = plan.new_rows.get(v, 0)
        spread = np.unique(np.round(np.linspace(0, len(rest) - 1, count)).astype(np.int64))
        chosen = np.zeros(len(rest), dtype=bool)
        chosen[spread[:count]] = True
        selected.extend(rest[chosen].tolist())
        others = rng.permutation(rest[~chosen])
        extra = plan.extras.get(v, 0)
        if extra:
            hosts = np.array([k for k in kept_clusters
                              if v not in clusters.present[k] and v not in substituted_in[k]],
                             dtype=np.int64)
            host_pool = _NearestPool(clusters.rank[hosts], hosts)
            for row in others[:extra].tolist():
                cluster[row] = host_pool.take(float(rank[row]))
    compositions = compose_new_clusters(plan.new_rows, plan.new_clusters, category, lam, tau)
    selected_rows = np.asarray(sorted(selected, key=lambda r: rank[r]), dtype=np.int64)
    chosen_values = values[selected_rows]
    new_pools = {int(v): _NearestPool(rank[selected_rows[chosen_values == v]],
                                      selected_rows[chosen_values == v])
                 for v in np.unique(chosen_values).tolist()}
    hosting: dict[int, list[int]] = {}
    for c, composition in enumerate(compositions):
        for v in composition:
            hosting.setdefault(v, []).append(c)
    done = np.zeros(len(compositions), dtype=bool)
    for row in selected_rows.tolist():
        if cluster[row] >= 0:
            continue
        v = int(values[row])
        while done[hosting[v][-1]]:
            hosting[v].pop()
        c = hosting[v].pop()
        done[c] = True
        for u in compositions[c]:
            # For the seed's own value the nearest free row is the seed itself.
            cluster[new_pools[u].take(float(rank[row]))] = first_new + c
    return Placement(cluster=cluster, published=published, substituted=substituted,
                     new_clusters=len(compositions))
