"""Slot-preserving regrouping: rows of one sensitive value trade places between groups.

A release's groups each hold one real row per value of a fixed set (its *slots*; the other
values of its signature are counterfeits). Moving the ``v``-rows of ``k`` groups among
those groups' ``v``-slots keeps every group's signature and its counterfeits, hence every
bucket's size and the (a) objective, and hence what the next release inherits: the same
buckets of the same sizes, only other persons in them (m-invariance paper, Xiao & Tao,
SIGMOD 2007, §4: the next release's division sees signatures and bucket sizes, and its
deficits come from the persons deleted). Letting rows change signature freely lowered (b)
far more on Adult but cost the next releases counterfeits (``benchmarks/RESULTS.md``,
"Whole-release optimization"); this move is the part of that freedom that costs nothing
later. Only new rows change signature; an old row moves only to a group of its own bucket.

One move is exact: with the other rows of the ``k`` groups fixed, placing ``k`` rows into
``k`` slots at cost ``|σ_j| · extent(rest_j ∪ {row})`` is a linear assignment problem
(Kuhn, *The Hungarian method for the assignment problem*, Naval Research Logistics
Quarterly 2, 1955), solved with OR-Tools' ``SimpleLinearSumAssignment`` on costs rounded
to 1e-3, ``_SCALE`` (the move is then checked in floating point; SciPy's dense solver was measured
faster but SciPy is not a dependency). The current placement is one assignment, so a move never
makes (b) worse. A matheuristic like the neighbourhoods of
:mod:`republish.models.whole_release_neighbourhoods`: it proves nothing about the release.

Which ``k`` groups trade decides what the search finds. They are the holders of ``v``
whose centroids are nearest a centre, measured on the extent's own scale
(:func:`~republish.models.whole_release_extent_tables.unit_points`): on raw leaf codes
Adult's native-country (41 leaves) and education (16) decided nearness and age and sex
(the largest part of the cost) hardly counted. The release's hierarchy extents are read
from tables (:mod:`republish.models.whole_release_extent_tables`, the same numbers), so
that more, larger assignments fit in the budget. Measured on 20,000 Adult rows, release 1,
30 CPU-seconds, (b) against the heuristic's release: session 5's trades -13.7 % (m = 4) and
-13.2 % (m = 7); these -16.9 % and -15.6 % (measured with SciPy's assignment solver). Pair
exchanges (two nearby groups swapping the rows of several shared values at once, every
subset tried) gained 0.03 % more after the trades and were left out.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ortools.graph.python import linear_sum_assignment

from republish.models.whole_release_counts import BoxExtent, Extent
from republish.models.whole_release_extent_tables import tabulated, unit_points
from republish.models.whole_release_problem import WholeReleaseProblem, group_signature

__all__ = ["SLOT_GROUPS", "SLOT_GROUPS_MAX", "SlotSearch", "trade_slots"]

#: Groups whose ``v``-rows are re-assigned together (one ``k × k`` assignment problem) at
#: first, and the most they grow to: the window doubles each time ``patience // 4``
#: assignments in a row gain nothing. Small windows gain fastest at first, larger ones
#: find what small ones no longer can (20,000 Adult rows, release 1, 30 CPU-seconds:
#: 64 groups -15.8 % (m = 4) / -14.8 % (m = 7), stalled; 128 groups -16.8 % / -15.3 %;
#: 64 growing to 256 -16.0 % / -14.9 %; 192 groups -16.3 % / -14.9 %).
SLOT_GROUPS = 128
SLOT_GROUPS_MAX = 256
#: Consecutive assignments without a gain after which the search stops (a local optimum
#: for single-value trades, in practice).
SLOT_PATIENCE = 3_000
#: Costs go to the integer assignment solver in units of 1e-3 (its cost-scaling
#: algorithm runs in time growing with the log of the largest cost; a move is kept only if
#: it gains in floating point). 8 s of trades from the paper's release: 20,000 Adult rows
#: (m = 3, release 2) 3,667 assignments and (b) 15,818 against 2,873 and 15,873 in units
#: of 1e-6; 200,000 census rows (m = 10) 2,232 and 66,714 against 1,931 and 67,076.
_SCALE = 1e3


@dataclass(frozen=True)
class SlotSearch:
    """The regrouped release, how many assignment problems were solved and improved, and
    the total decrease of (b)."""

    groups: tuple[np.ndarray, ...]
    solved: int
    improved: int
    gain: float


def _joined(measure: Extent, rest: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``extent(rest[b] ∪ {rows[a]})`` as an ``(A, B)`` matrix: the extent's own
    ``joined`` when it has one (one box per group, not one per pair), else batches."""
    joined = getattr(measure, "joined", None)
    if joined is not None:
        return np.asarray(joined(rest, rows), dtype=np.float64)
    trial = np.repeat(rest[None, :, :], len(rows), axis=0)
    free = np.argmax(rest < 0, axis=1)  # the emptied slot of each group
    trial[:, np.arange(len(rest)), free] = rows[:, None]
    return _extents(measure, trial.reshape(-1, rest.shape[1])).reshape(len(rows), len(rest))


def _extents(measure: Extent, members: np.ndarray) -> np.ndarray:
    batch = getattr(measure, "batch", None)
    if batch is not None:
        return np.asarray(batch(members), dtype=np.float64)
    return np.array([float(measure(m[m >= 0])) for m in members], dtype=np.float64)


def _assign(placed: np.ndarray, allowed: np.ndarray, scale: float = _SCALE) -> np.ndarray:
    """The row each group receives in a least-cost assignment over the allowed pairs
    (the diagonal, the current placement, always is), costs in units of ``1/scale``."""
    solver = linear_sum_assignment.SimpleLinearSumAssignment()
    source, target = np.nonzero(allowed)
    solver.add_arcs_with_cost(source, target,
                              np.rint(placed[source, target] * scale).astype(np.int64))
    if solver.solve() != solver.OPTIMAL:
        return np.arange(len(placed))
    order = np.empty(len(placed), dtype=np.int64)
    for a in range(len(placed)):
        order[solver.right_mate(a)] = a
    return order


def _centroids(points: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Mean point of each row of ``members`` (``-1`` = none)."""
    used = members >= 0
    total = np.where(used[:, :, None], points[np.maximum(members, 0)], 0.0).sum(axis=1)
    return total / np.maximum(used.sum(axis=1), 1)[:, None]


def trade_slots(problem: WholeReleaseProblem, groups: Sequence[np.ndarray], *, deadline: float,
                seed: int = 0, extent: Extent | None = None,
                groups_per_move: int = SLOT_GROUPS, patience: int = SLOT_PATIENCE,
                max_groups_per_move: int = SLOT_GROUPS_MAX) -> SlotSearch:
    """Lower (b) of the release ``groups`` of ``problem`` by slot-preserving moves (module
    docstring) until ``time.perf_counter()`` passes ``deadline``.

    Each move takes a value ``v`` and ``groups_per_move`` groups holding a real ``v``-row
    whose centroids are nearest a random one (drawn in proportion to its cost), and
    re-assigns their ``v``-rows optimally; ``groups_per_move`` doubles, up to
    ``max_groups_per_move``, after ``patience // 4`` assignments in a row without a gain.
    Deferred rows stay deferred, every group keeps its signature and counterfeits. Stops
    early after ``patience`` assignments in a row without a gain at the largest window."""
    if groups_per_move < 2:
        raise ValueError(f"groups_per_move must be >= 2; got {groups_per_move}")
    rng = np.random.default_rng(seed)
    measure: Extent = tabulated(extent) if extent is not None else BoxExtent(problem.points)
    width = max((len(g) for g in groups), default=1)
    matrix = np.full((len(groups), width), -1, dtype=np.int64)
    for j, g in enumerate(groups):
        matrix[j, :len(g)] = np.sort(np.asarray(g, dtype=np.int64))
    if len(groups) < 2:
        return SlotSearch(tuple(r[r >= 0] for r in matrix), 0, 0, 0.0)
    sigmas = [group_signature(problem, r[r >= 0]) for r in matrix]
    size = np.array([len(s) for s in sigmas], dtype=np.float64)
    codes = {s: c for c, s in enumerate(dict.fromkeys(sigmas))}
    group_code = np.array([codes[s] for s in sigmas], dtype=np.int64)
    row_code = np.full(len(problem.values), -1, dtype=np.int64)  # an old row's bucket σ
    for b, sigma in enumerate(problem.signatures):
        if sigma in codes:
            row_code[problem.bucket == b] = codes[sigma]
    value_of = np.where(matrix >= 0, problem.values[np.maximum(matrix, 0)], -1)
    holders = [np.flatnonzero((value_of == v).any(axis=1)) for v in range(problem.domain_size)]
    values = [v for v, h in enumerate(holders) if len(h) >= 2]
    # nearness on the extent's own scale (hierarchy leaf codes divided by their span)
    near_points = unit_points(problem.points, measure)
    centroids = _centroids(near_points, matrix)
    cost = size * _extents(measure, matrix)
    solved = improved = 0
    gain = 0.0
    idle = 0
    window = groups_per_move
    while values and time.perf_counter() < deadline:
        if idle >= max(1, patience // 4) and window < max_groups_per_move:
            window, idle = min(2 * window, max_groups_per_move), 0
        elif idle >= patience:
            break
        v = values[int(rng.integers(len(values)))]
        mine = holders[v]
        # centred on a costly group more often: that is where trades gain (measured on
        # 20,000 Adult rows, 10 s: -19.7 % against -19.0 % with uniform centres at m = 5)
        weight = cost[mine] + 1e-12
        centre = centroids[mine[int(rng.choice(len(mine), p=weight / weight.sum()))]]
        k = min(window, len(mine))
        distance = np.abs(centroids[mine] - centre).sum(axis=1)
        chosen = mine[np.argpartition(distance, k - 1)[:k]]
        slot = np.argmax(value_of[chosen] == v, axis=1)
        rows = matrix[chosen, slot]
        rest = matrix[chosen].copy()
        rest[np.arange(k), slot] = -1
        placed = size[chosen][None, :] * _joined(measure, rest, rows)  # [row a, group b]
        # an old row only into a group of its signature holding no other bucket's rows
        rest_bucket = np.where(rest >= 0, problem.bucket[np.maximum(rest, 0)], -1).max(axis=1)
        row_bucket = problem.bucket[rows]
        same_signature = row_code[rows][:, None] == group_code[chosen][None, :]
        same_bucket = (rest_bucket[None, :] < 0) | (rest_bucket[None, :] == row_bucket[:, None])
        allowed = (row_bucket[:, None] < 0) | (same_signature & same_bucket)
        # a group with counterfeits whose only old row leaves becomes all-new: its σ is
        # then recomputed from its values (and its counterfeits need counterfeits_in_new_
        # groups), so a new row may take that slot only where σ stays the same
        loses_bucket = (rest_bucket < 0) & (row_bucket >= 0) & (
            size[chosen] > (matrix[chosen] >= 0).sum(axis=1))
        newcomers = np.flatnonzero(row_bucket < 0)
        for g in np.flatnonzero(loses_bucket).tolist() if len(newcomers) else []:
            # every newcomer has value v: the all-new group's σ is the same for each
            trial = np.append(rest[g][rest[g] >= 0], rows[newcomers[0]])
            allowed[newcomers, g] = problem.counterfeits_in_new_groups and \
                group_signature(problem, trial) == sigmas[chosen[g]]
        solved += 1
        idle += 1
        before = cost[chosen].sum()
        masked = np.where(allowed, placed, np.inf)
        floor = max(masked.min(axis=0).sum(), masked.min(axis=1).sum())
        if floor >= before - 1e-9 * max(1.0, before):
            continue  # no assignment beats the current one: skip the solver
        order = _assign(placed, allowed)
        after = placed[order, np.arange(k)]
        if after.sum() >= before - 1e-9 * max(1.0, before):
            continue
        moved = matrix[chosen].copy()
        moved[np.arange(k), slot] = rows[order]
        matrix[chosen] = moved
        cost[chosen] = after
        centroids[chosen] = _centroids(near_points, moved)
        improved, idle = improved + 1, 0
        gain += float(before - after.sum())
    return SlotSearch(tuple(np.sort(r[r >= 0]) for r in matrix), solved, improved, gain)
