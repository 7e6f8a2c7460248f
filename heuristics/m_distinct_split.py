"""m-Distinct release, phase 3: split balanced buckets into QI groups (Li & Zhou, §V-C).

A balanced bucket has ``s`` entries of ``δ`` rows each and no value on more than ``δ``
rows. A QI group takes one row of every entry, all values distinct; such a bucket always
splits into ``δ`` groups (a bipartite multigraph of maximum degree ``δ``, entries against
values, is ``δ``-edge-colourable, König), so the paper splits recursively in two children
that are balanced again: every entry of the first child holds ``δ_1`` rows, of the second
``δ_2 = δ - δ_1``, and no value more than ``δ_1`` (``δ_2``) rows of its child.

Split plans (§V-C): per QI, the rows sorted on it (counterfeits last: they have no QI) are
picked greedily into the first child while its entry and value quotas allow; the plan of
smallest split score (eq. 4) ``Σ_i |B_i| Σ_j l_ij / I_j`` over the QIs and both halvings
``δ_1 ∈ {⌊δ/2⌋, ⌈δ/2⌉}`` wins (``l_ij`` the extent of child ``i`` on QI ``j``, ``I_j``
the parent's). When the greedy pick breaks a value's lower quota ``f_v - δ_2``, the
first child is instead the exact minimum rank-sum selection of a min-cost flow (one unit
arc per row; the lower quotas enter as node demands). The paper enumerates picks recursively
(``δ'^{|USS(B)|-1}`` operations); the flow keeps every split polynomial.

Buckets whose entries are pairwise disjoint need no value check at all: any row per entry
gives distinct values, which is the m-invariance split (§4.3 there) with entries for
values, run vectorized by :mod:`republish.heuristics.perimeter_split`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.graph.python import min_cost_flow

from republish.heuristics.perimeter_split import split_buckets_min_perimeter

__all__ = ["DistinctSplit", "split_distinct_buckets"]


@dataclass(frozen=True)
class DistinctSplit:
    """``groups[i]``: group (0..G-1) of row ``i``; ``levels``: deepest recursion."""

    groups: np.ndarray
    group_count: int
    levels: int


def _select_greedy(
    order: np.ndarray, entries: np.ndarray, values: np.ndarray, first: int, second: int,
    frequency: np.ndarray, entry_count: int,
) -> np.ndarray | None:
    """First child (mask over the segment) picked in ``order`` within the quotas, or None
    when a value's lower quota is missed."""
    taken_entry = [0] * entry_count
    taken_value = [0] * len(frequency)
    chosen = np.zeros(len(order), dtype=bool)
    picked = 0
    for position, e, v in zip(order.tolist(), entries[order].tolist(), values[order].tolist(),
                              strict=True):
        if taken_entry[e] < first and taken_value[v] < first:
            taken_entry[e] += 1
            taken_value[v] += 1
            chosen[position] = True
            picked += 1
            if picked == entry_count * first:
                break
    if picked != entry_count * first or any(
        t < f - second for t, f in zip(taken_value, frequency.tolist(), strict=True)
    ):
        return None
    return chosen


def _select_flow(
    order: np.ndarray, entries: np.ndarray, values: np.ndarray, first: int, second: int,
    frequency: np.ndarray, entry_count: int,
) -> np.ndarray:
    """Minimum rank-sum first child meeting every quota (exact, min-cost flow).

    Source -> entry (``first`` each) -> value (one unit arc per row, cost its rank) ->
    sink, the arc value -> sink bounded by ``[f_v - second, min(first, f_v)]``; the lower
    bound is moved into the supplies (value demands it, the sink receives it less).
    """
    flow = min_cost_flow.SimpleMinCostFlow()
    source, sink = 0, 1
    value_base = 2 + entry_count
    for e in range(entry_count):
        flow.add_arc_with_capacity_and_unit_cost(source, 2 + e, first, 0)
    arcs = flow.add_arcs_with_capacity_and_unit_cost(
        2 + entries[order], value_base + values[order], np.ones(len(order), dtype=np.int64),
        np.arange(len(order), dtype=np.int64))
    forced = 0
    for v, f in enumerate(frequency.tolist()):
        lower, upper = max(0, f - second), min(first, f)
        if upper > lower:
            flow.add_arc_with_capacity_and_unit_cost(value_base + v, sink, upper - lower, 0)
        if lower:
            flow.set_node_supply(value_base + v, -lower)
            forced += lower
    flow.set_node_supply(source, entry_count * first)
    flow.set_node_supply(sink, forced - entry_count * first)
    status = flow.solve()
    if status != flow.OPTIMAL:  # pragma: no cover - König guarantees a split
        raise RuntimeError(f"no balanced split of a bucket ({status}).")
    chosen = np.zeros(len(order), dtype=bool)
    chosen[order[flow.flows(arcs) > 0]] = True
    return chosen


def _check_quotas(chosen: np.ndarray, entries: np.ndarray, values: np.ndarray, first: int,
                  second: int, frequency: np.ndarray, entry_count: int) -> None:
    """Both children balanced with no value above their ``δ`` (else a bug: refuse)."""
    per_entry = np.bincount(entries[chosen], minlength=entry_count)
    per_value = np.bincount(values[chosen], minlength=len(frequency))
    if (per_entry != first).any() or (per_value > first).any() or (
        (frequency - per_value) > second
    ).any():  # pragma: no cover - a broken selection would publish duplicate values
        raise RuntimeError("a bucket split broke the entry or value quotas.")


def _extent(points: np.ndarray) -> np.ndarray:
    """Per-QI extent of the real rows (NaN rows are counterfeits: fmax/fmin skip them)."""
    if not len(points):
        return np.zeros(points.shape[1])
    extent = np.fmax.reduce(points, axis=0) - np.fmin.reduce(points, axis=0)
    return np.nan_to_num(extent, nan=0.0)


def _extents(points: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``_extent`` of the rows selected by every mask: shape ``(plans, d)``."""
    selected = np.where(masks[:, :, None], points[None, :, :], np.nan)
    extent = np.fmax.reduce(selected, axis=1) - np.fmin.reduce(selected, axis=1)
    return np.nan_to_num(extent, nan=0.0)


def _split_one(
    rows: np.ndarray, points: np.ndarray, entries: np.ndarray, values: np.ndarray,
    rank: np.ndarray,
) -> tuple[list[np.ndarray], int]:
    """Recursive halving of one balanced bucket; returns its groups and depth."""
    local_entries = np.unique(entries[rows], return_inverse=True)[1].astype(np.int64)
    local_values = np.unique(values[rows], return_inverse=True)[1].astype(np.int64)
    entry_count = int(local_entries.max()) + 1
    groups: list[np.ndarray] = []
    stack = [(np.arange(len(rows)), 0)]
    depth = 0
    with np.errstate(invalid="ignore"):
        while stack:
            segment, level = stack.pop()
            delta = len(segment) // entry_count
            depth = max(depth, level)
            if delta <= 1:
                groups.append(rows[segment])
                continue
            seg_points = points[rows[segment]]
            seg_entries = local_entries[segment]
            seg_values = np.unique(local_values[segment], return_inverse=True)[1]
            frequency = np.bincount(seg_values)
            scale = _extent(seg_points)
            scale = np.where(scale > 0, scale, np.inf)
            plans = []
            for a in range(points.shape[1]):
                order = np.argsort(rank[rows[segment], a], kind="stable")
                for first in sorted({delta // 2, delta - delta // 2}):
                    second = delta - first
                    chosen = _select_greedy(order, seg_entries, seg_values, first, second,
                                            frequency, entry_count)
                    if chosen is None:
                        chosen = _select_flow(order, seg_entries, seg_values, first, second,
                                              frequency, entry_count)
                    _check_quotas(chosen, seg_entries, seg_values, first, second, frequency,
                                  entry_count)
                    plans.append(chosen)
            masks = np.array(plans)
            sizes = masks.sum(axis=1)[:, None]
            # eq. 4 for every plan at once: |B_1| Σ_j l_1j / I_j + |B_2| Σ_j l_2j / I_j
            scores = (
                sizes * (_extents(seg_points, masks) / scale)
                + (len(segment) - sizes) * (_extents(seg_points, ~masks) / scale)
            ).sum(axis=1)
            chosen = masks[int(np.argmin(scores))]
            stack.append((segment[~chosen], level + 1))
            stack.append((segment[chosen], level + 1))
    return groups, depth


def split_distinct_buckets(
    points: np.ndarray,
    values: np.ndarray,
    entries: np.ndarray,
    buckets: np.ndarray,
    disjoint: np.ndarray,
) -> DistinctSplit:
    """Split every balanced bucket into groups of one row per entry, values distinct.

    Parameters
    ----------
    points:
        ``(n, d)`` QIs normalized to [0, 1]; a row of NaN marks a counterfeit.
    values, entries, buckets:
        Value code, entry index (within its bucket) and bucket index of every row; every
        entry of a bucket holds the same number of rows and no value more than that.
    disjoint:
        ``disjoint[b]``: the entries of bucket ``b`` share no value (fast path).
    """
    n = len(values)
    groups = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return DistinctSplit(groups, 0, 0)
    buckets = np.asarray(buckets, dtype=np.int64)
    fast = np.asarray(disjoint, dtype=bool)[buckets]
    next_group = 0
    levels = 0
    if fast.any():
        split = split_buckets_min_perimeter(points[fast], entries[fast], buckets[fast])
        groups[fast] = split.groups
        next_group, levels = split.group_count, split.levels
    slow = np.flatnonzero(~fast)
    if len(slow):
        key = np.where(np.isnan(points), np.inf, points)  # counterfeits sort last
        rank = np.argsort(np.argsort(key, axis=0, kind="stable"), axis=0, kind="stable")
        for b in np.unique(buckets[slow]).tolist():
            rows = slow[buckets[slow] == b]
            parts, depth = _split_one(rows, points, entries, values, rank)
            levels = max(levels, depth)
            for part in parts:
                groups[part] = next_group
                next_group += 1
    return DistinctSplit(groups=groups, group_count=next_group, levels=levels)
