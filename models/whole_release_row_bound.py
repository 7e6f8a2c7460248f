"""A per-row lower bound on objective (b) of one release step, for releases of any size.

Objective (b) of :mod:`republish.models.whole_release` is ``Σ_G |σ(G)|·ext(R(G))`` (the
perimeter of the m-invariance paper, Xiao & Tao 2007, §4.3), over the releases whose (a)
is optimal. Validity of :func:`row_bound`:

1. ``|σ(G)| >= |R(G)|`` (one real row per value of σ), so ``(b) >= Σ_G Σ_{i∈R(G)} ext(R(G))
   = Σ_i ext(R(G(i)))`` over the published rows ``i``.
2. ``ext(R(G(i))) >= LB_i``, the least extent of any group row ``i`` may sit in (§4.1-4.2
   rules: a group of bucket ``b`` holds rows of distinct values of ``σ_b``, new rows or
   old rows of ``b``; an all-new group, rows of distinct values). A release of (a) ``<=
   A*`` has ``cf <= ⌊A*⌋`` counterfeits and, with bucket ``b'`` needing ``forced_{b'}``
   anyway, a group of ``b`` at least ``s_b - (⌊A*⌋ - Σ_{b'≠b} forced_{b'})`` real rows.
   ``full_i``: no counterfeit in ``i``'s group (it holds a row of every value of ``σ_b``,
   or ``>= m`` rows); ``relaxed_i <= full_i``: as few rows as the budget allows.
3. At most ``cf`` groups hold counterfeits, each with ``<= S - 1`` real rows (``S`` the
   largest signature), and ``w·D <= A* - cf`` rows are deferred (cost 0). So ``(b) >=
   Σ_i full_i - max_D [top_D(full over new rows) + top_{(S-1)⌊A*-wD⌋}(full - relaxed)]``.
4. Capacity (:mod:`republish.models.whole_release_capacity`), the second bound (the larger
   is returned): nested cells
   (exact points; then hierarchy ancestors, numeric QIs free). Rows kept in groups inside
   a cell ``C`` are at most what its value counts allow (:func:`_excess`: per bucket
   ``g`` groups hold ``<= min(k_u, g)`` old rows of value ``u`` and need ``Σ_u (g -
   avail_u)^+ <= spare_b`` counterfeits; ``h`` new groups need ``m·h <= Σ_u min(N_u, h)
   + spare_new``), so ``>= excess(C)`` rows of ``C`` are deferred or sit in groups
   reaching outside ``C``, of extent ``>= exit_i(C)`` (a row outside ``C`` differs in a
   coordinate defining ``C``: a strictly larger ancestor, or the nearest other numeric
   value). With ``cost_i(k) = max(relaxed_i, exit_i(C_0..C_k))`` nondecreasing, ``(b) >=
   Σ relaxed + Σ_k Σ_{C at level k} (the excess(C) least increments in C) - top_D(cost)``.

``LB_i`` is a lower bound of the least extent, exact for separable extents with one
numeric QI: ``ext(R) = Σ_q f_q(min_q R, max_q R)`` with ``f_q`` monotone under interval
inclusion (:class:`BoxExtent`, and the perimeter of :class:`republish.objectives.
ReleaseCost` with hierarchy QIs). A hierarchy QI's interval around ``x_i`` lies in exactly
one lowest ancestor of ``x_i``, whose ``f_q`` it has: enumerating the ancestor levels of
every hierarchy QI (a "cell") leaves, per cell, a one-dimensional problem on a numeric QI
``s`` (``f_s = max - min``): with ``l_u``/``r_u`` the distances to the nearest row of
value ``u`` left/right of ``x_i`` in the cell, ``min a + b`` s.t. ``>= t`` allowed values
have ``l_u <= a`` or ``r_u <= b`` (``a`` ranges over ``{0} ∪ {l_u}``). Other numeric QIs
add their own one-dimensional minimum (``min Σ >= Σ min``). Any other monotone extent
gets the ``t``-th smallest per-value nearest pair extent (``ext(R) >= ext({i, j})``).

LP duality: ``pi_i = relaxed_i`` (0 for deferrable rows) has ``Σ_{i∈R_c} pi_i <=
|R_c|·ext(R_c) <= cost_c`` for every column of the set-partitioning master built with
counterfeit budget ``<= ⌊A*⌋`` (:func:`republish.models.whole_release_counts.families`):
a feasible dual (``y_a = 0``), so ``Σ pi`` is an LP bound and ``cost_c - Σ pi`` reduced
costs usable for fixing.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from republish.models.whole_release_capacity import Chain, budget, capacity, distinct_rows
from republish.models.whole_release_counts import BoxExtent, Extent, ReleaseCounts
from republish.objectives import ReleaseCost
from republish.schema import Hierarchy

if TYPE_CHECKING:
    from republish.models.whole_release_problem import WholeReleaseProblem

__all__ = ["RowBound", "row_bound"]

#: Rows up to which a non-separable extent is bounded by per-pair calls (no ``pairwise``).
CALL_ROWS = 300


@dataclass(frozen=True)
class RowBound:
    """``bound``: a lower bound on (b) over releases of (a) ``<= a_star``; per row
    ``full``/``relaxed`` (module docstring, 2.), ``duals`` a feasible LP dual; ``excused``
    the subtraction of 3.; ``method``: ``separable``, ``pairwise`` or ``none``."""

    bound: float
    full: np.ndarray
    relaxed: np.ndarray
    duals: np.ndarray
    excused: float
    method: str
    wall_time_s: float
    cpu_time_s: float
    by_rows: float = 0.0
    by_capacity: float = 0.0




def _separable(problem: WholeReleaseProblem, extent: Extent | None
               ) -> tuple[list[np.ndarray], list[Chain]] | None:
    """Numeric coordinates and hierarchy chains of a separable extent, else None."""
    cost = getattr(extent, "cost", None)
    if extent is None or isinstance(extent, BoxExtent):
        points = problem.points if extent is None else extent.points
        kinds: list[Hierarchy | None] = [None] * points.shape[1]
    elif isinstance(cost, ReleaseCost) and cost.name == "perimeter" and \
            getattr(extent, "separable", False):
        points, kinds = cost.points, [qi.hierarchy for qi in cost.schema.qis]
    else:
        return None
    numeric, chains = [], []
    for q, hierarchy in enumerate(kinds):
        x = points[:, q]
        if hierarchy is not None:
            code = x.astype(np.int64)
            leaves = max(len(hierarchy.leaves) - 1, 1)
            cells, sizes = hierarchy.node_ids[:, code], hierarchy.node_sizes[:, code]
            keep = [0] + [k for k in range(1, len(cells))
                          if not np.array_equal(cells[k], cells[k - 1])]
            chains.append((cells[keep], (sizes[keep] - 1) / leaves))
        elif len(np.unique(x)) <= 2:  # two values: a leaf and a root level
            lows = np.zeros((2, len(x)))
            lows[1] = np.ptp(x) if len(x) else 0.0
            chains.append((np.vstack([x == x.max(initial=0), np.zeros(len(x))]).astype(
                np.int64), lows))
        else:
            numeric.append(x)
    return numeric, chains


def _window(left: np.ndarray, right: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per row ``min a + b`` such that ``>= t`` columns have ``left <= a`` or ``right <= b``
    (``inf``: impossible); ``a`` over ``{0} ∪ left`` suffices. With the columns in order
    of ``left``, ``a`` = the ``j``-th left covers the first ``j`` and ``b`` is the
    ``(t - j)``-th smallest right of the others: the ``max t`` smallest rights of each
    suffix are kept sorted from the right end (one compare-exchange pass per column), not
    sorted again per ``j`` (200,000 queries over 50 values: 0.1 s instead of 1.6 s)."""
    order = np.argsort(left, axis=1, kind="stable")
    # column-major: each pass below reads and writes contiguous rows of q entries
    ls = np.ascontiguousarray(np.take_along_axis(left, order, 1).T)
    rs = np.ascontiguousarray(np.take_along_axis(right, order, 1).T)
    v, q = ls.shape
    kept = max(int(t.max(initial=0)), 1)
    smallest = np.full((kept, q), math.inf)  # sorted; inf pads a short suffix
    low, carried = np.empty(q), np.empty(q)
    every = np.arange(q)
    best = np.where(t <= 0, 0.0, math.inf)
    for j in range(v, -1, -1):
        if j < v:  # smallest now covers rs[j:]
            carried[:] = rs[j]
            for k in range(kept):
                np.minimum(smallest[k], carried, out=low)
                np.maximum(smallest[k], carried, out=carried)
                smallest[k] = low
        need = t - j
        b = np.where(need <= 0, 0.0, smallest[np.clip(need - 1, 0, kept - 1), every])
        best = np.minimum(best, b if j == 0 else ls[j - 1] + b)
    return best


def _nearest(pool_comb: np.ndarray, pool_x: np.ndarray, q_comb: np.ndarray, q_x: np.ndarray,
             span: int) -> tuple[np.ndarray, np.ndarray]:
    """Distances to the nearest pool entry of the same key at ``x <= q_x`` (left) and
    ``x >= q_x`` (right); entries sorted by ``comb = key·span + rank(x)``."""
    if not len(pool_comb):
        return np.full(len(q_comb), math.inf), np.full(len(q_comb), math.inf)
    last, key = len(pool_comb) - 1, q_comb // span
    at = np.searchsorted(pool_comb, q_comb, side="left")
    ok = (at <= last) & (pool_comb[np.minimum(at, last)] // span == key)
    right = np.where(ok, pool_x[np.minimum(at, last)] - q_x, math.inf)
    at = np.searchsorted(pool_comb, q_comb, side="right") - 1
    ok = (at >= 0) & (pool_comb[np.maximum(at, 0)] // span == key)
    left = np.where(ok, q_x - pool_x[np.maximum(at, 0)], math.inf)
    return left, right


@dataclass(frozen=True)
class _Queries:
    """One row per (row, scope): scope ``b >= 0`` a group of bucket ``b``, ``-1`` a new
    group; ``allowed`` (Q, V) values its other rows may take; ``>= t`` of them needed."""

    row: np.ndarray
    scope: np.ndarray
    allowed: np.ndarray
    t_full: np.ndarray
    t_relaxed: np.ndarray


def _queries(problem: WholeReleaseProblem, counts: ReleaseCounts, rows: np.ndarray,
             cf_max: int) -> _Queries:
    """The groups each of ``rows`` may sit in (module docstring, 2.)."""
    values, bucket, m = problem.values, problem.bucket, problem.m
    size = counts.signature_size
    spare, spare_new = budget(problem, counts, cf_max)
    lo = np.clip(size - spare, 1, size)
    lo_new = int(np.clip(m - spare_new, 1, m))
    other = values[rows][:, None] != np.arange(problem.domain_size)[None, :]
    parts = []
    old = rows[bucket[rows] >= 0]
    if len(old):
        b = bucket[old]
        parts.append((old, b, counts.in_signature[b], size[b] - 1, lo[b] - 1))
    new = rows[bucket[rows] < 0]
    for b in np.flatnonzero([len(o) > 0 for o in counts.old_rows]).tolist():
        joining = new[counts.in_signature[b, values[new]]]
        parts.append((joining, np.full(len(joining), b), np.repeat(
            counts.in_signature[b][None], len(joining), 0), np.full(len(joining), size[b] - 1),
            np.full(len(joining), lo[b] - 1)))
    parts.append((new, np.full(len(new), -1), np.ones((len(new), problem.domain_size), bool),
                  np.full(len(new), m - 1), np.full(len(new), lo_new - 1)))
    row, scope, allowed, t_full, t_relaxed = (np.concatenate(x) for x in zip(*parts,
                                                                             strict=True))
    position = np.full(len(values), -1)
    position[rows] = np.arange(len(rows))
    allowed = allowed & other[position[row]]
    return _Queries(row.astype(np.int64), scope.astype(np.int64), allowed,
                    t_full.astype(np.int64), t_relaxed.astype(np.int64))


def _cell_minimum(problem: WholeReleaseProblem, queries: _Queries, chains: list[Chain],
                  x: np.ndarray, deadline: float) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the least ``Σ_chains f + (max - min of x)`` of its groups (full and
    relaxed), by cells (module docstring); past ``deadline`` the cells not visited count
    their chain part only (smaller: still a lower bound)."""
    values, bucket = problem.values, problem.bucket
    _, rank = np.unique(x, return_inverse=True)
    span = int(rank.max(initial=0)) + 2
    pools = [(np.flatnonzero((bucket < 0) & (values == u)),
              np.flatnonzero((bucket >= 0) & (values == u)))
             for u in range(problem.domain_size)]
    q_row = queries.row
    full = np.full(len(q_row), math.inf)
    relaxed = np.full(len(q_row), math.inf)
    same_t = bool(np.array_equal(queries.t_full, queries.t_relaxed))
    for combo in itertools.product(*(range(len(c[0])) for c in chains)):
        length = sum((c[1][k][q_row] for c, k in zip(chains, combo, strict=True)),
                     np.zeros(len(q_row)))
        active = np.flatnonzero(length < full)
        if not len(active):
            continue
        if time.perf_counter() > deadline:
            relaxed[active] = np.minimum(relaxed[active], length[active])
            full[active] = np.minimum(full[active], length[active])
            continue
        found = _cell_rows(problem, queries, chains, combo, pools, x, rank, span, active,
                           deadline)
        if found is None:  # out of time within the cell: its chain part only
            relaxed[active] = np.minimum(relaxed[active], length[active])
            full[active] = np.minimum(full[active], length[active])
            continue
        left, right = found
        best = length[active] + _window(left, right, queries.t_full[active])
        full[active] = np.minimum(full[active], best)
        if not same_t:
            best = length[active] + _window(left, right, queries.t_relaxed[active])
        relaxed[active] = np.minimum(relaxed[active], best)
    return full, np.minimum(relaxed, full)


def _cell_rows(problem: WholeReleaseProblem, queries: _Queries, chains: list[Chain],
               combo: tuple[int, ...], pools: list[tuple[np.ndarray, np.ndarray]],
               x: np.ndarray, rank: np.ndarray, span: int, active: np.ndarray,
               deadline: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Per active query and value, the distance on ``x`` to the nearest row it may group
    with in its cell, left and right (``inf``: none); None past ``deadline`` (checked per
    value: 200,000 rows over 50 values take about 1.5 s a cell)."""
    bucket, n = problem.bucket, len(problem.values)
    buckets = len(problem.signatures) + 1
    q_row, q_scope = queries.row, queries.scope
    cell = np.zeros(n, dtype=np.int64)
    for c, k in zip(chains, combo, strict=True):
        cell = cell * (int(c[0][k].max(initial=0)) + 1) + c[0][k]
    rows, scope = q_row[active], q_scope[active]
    left = np.full((len(active), problem.domain_size), math.inf)
    right = left.copy()
    in_bucket = np.flatnonzero(scope >= 0)
    for u, (new_pool, old_pool) in enumerate(pools):
        comb = cell[new_pool] * span + rank[new_pool]
        order = np.argsort(comb, kind="stable")
        left[:, u], right[:, u] = _nearest(comb[order], x[new_pool][order],
                                           cell[rows] * span + rank[rows], x[rows], span)
        if len(in_bucket) and len(old_pool):
            key = cell[old_pool] * buckets + bucket[old_pool]
            comb = key * span + rank[old_pool]
            order = np.argsort(comb, kind="stable")
            mine = rows[in_bucket]
            q_key = cell[mine] * buckets + scope[in_bucket]
            near = _nearest(comb[order], x[old_pool][order], q_key * span + rank[mine],
                            x[mine], span)
            left[in_bucket, u] = np.minimum(left[in_bucket, u], near[0])
            right[in_bucket, u] = np.minimum(right[in_bucket, u], near[1])
        if time.perf_counter() > deadline:
            return None
    barred = ~queries.allowed[active]
    left[barred], right[barred] = math.inf, math.inf
    return left, right


def _separable_bound(problem: WholeReleaseProblem, queries: _Queries,
                     numeric: list[np.ndarray], chains: list[Chain], deadline: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``max_s [cells with sweep s + Σ_{q≠s} one-dimensional minimum of q]``."""
    alone = [_cell_minimum(problem, queries, [], x, deadline) for x in numeric]
    if not chains:
        zero = np.zeros(len(queries.row))
        return sum((a[0] for a in alone), zero), sum((a[1] for a in alone), zero)
    full = np.full(len(queries.row), -math.inf)
    relaxed = full.copy()
    for s, x in enumerate(numeric or [np.zeros(len(problem.values))]):
        coupled = _cell_minimum(problem, queries, chains, x, deadline)
        rest = [a for q, a in enumerate(alone) if q != s]
        full = np.maximum(full, coupled[0] + sum(a[0] for a in rest))
        relaxed = np.maximum(relaxed, coupled[1] + sum(a[1] for a in rest))
    return full, relaxed


def _pair_bound(problem: WholeReleaseProblem, queries: _Queries, extent: Extent,
                deadline: float, block: int = 256) -> tuple[np.ndarray, np.ndarray] | None:
    """Any monotone extent: ``ext(R) >= ext({i, j_u})`` for each other row ``j_u``, so the
    ``t``-th smallest per-value nearest pair extent; None past ``deadline``."""
    n, values, bucket = len(problem.values), problem.values, problem.bucket
    pairwise = getattr(extent, "pairwise", None)
    everything = np.arange(n)
    full = np.full(len(queries.row), math.inf)
    relaxed = full.copy()
    for start in range(0, len(queries.row), block):
        if time.perf_counter() > deadline:
            return None
        part = slice(start, start + block)
        rows, scope = queries.row[part], queries.scope[part]
        dist = np.asarray(pairwise(rows, everything), dtype=np.float64) if pairwise else \
            np.array([[extent(np.array([i, j])) for j in range(n)] for i in rows.tolist()],
                     dtype=np.float64).reshape(len(rows), n)
        member = (bucket[None, :] < 0) | (bucket[None, :] == scope[:, None])
        near = np.full((len(rows), problem.domain_size), math.inf)
        for u in range(problem.domain_size):
            near[:, u] = np.where(member & (values[None, :] == u), dist, math.inf).min(axis=1)
        near[~queries.allowed[part]] = math.inf
        near = np.hstack([np.zeros((len(rows), 1)), np.sort(near, axis=1)])
        full[part] = near[np.arange(len(rows)), np.minimum(queries.t_full[part],
                                                           near.shape[1] - 1)]
        relaxed[part] = near[np.arange(len(rows)), np.minimum(queries.t_relaxed[part],
                                                              near.shape[1] - 1)]
    return full, relaxed


def row_bound(problem: WholeReleaseProblem, extent: Extent | None = None,
              a_star: float | Fraction = 0, weight: Fraction | None = None, *,
              deadline: float = math.inf) -> RowBound:
    """A lower bound on (b) over the releases of ``problem`` whose (a) is at most
    ``a_star`` (pass A*, or any upper bound on it: the bound then holds for optimal (a)),
    by the argument of the module docstring. ``extent`` as in :func:`republish.models.
    whole_release.solve_whole_release` (None: the box extent); ``weight`` the deferral
    weight (default: the problem's as a fraction); ``deadline`` in ``time.perf_counter()``
    seconds (past it the bound gets weaker, never invalid)."""
    started, cpu = time.perf_counter(), time.process_time()
    n, values, bucket = len(problem.values), problem.values, problem.bucket
    w = Fraction(problem.deferral_weight).limit_denominator(1000) if weight is None \
        else Fraction(weight)
    a = Fraction(a_star).limit_denominator(10**9) if not isinstance(a_star, Fraction) \
        else a_star
    counts = ReleaseCounts.of(problem)
    cf_max = max(math.floor(a), 0)
    separable = _separable(problem, extent)
    if separable is not None:  # rows equal in the separable coordinates and (value, bucket)
        coords = np.column_stack([*separable[0], *(c[0][0] for c in separable[1]), values,
                                  bucket]) if n else np.zeros((0, 2))
        rows, inverse = distinct_rows(coords)
    else:
        rows, inverse = np.arange(n), np.arange(n)
    inverse = inverse.ravel()
    queries = _queries(problem, counts, rows, cf_max)
    found: tuple[np.ndarray, np.ndarray] | None = None
    method = "none"
    if separable is not None:
        found, method = _separable_bound(problem, queries, *separable, deadline), "separable"
    elif getattr(extent, "pairwise", None) is not None or n <= CALL_ROWS:
        assert extent is not None
        found, method = _pair_bound(problem, queries, extent, deadline), "pairwise"
    full, relaxed = np.full(n, math.inf), np.full(n, math.inf)
    if found is None:
        method, full, relaxed = "none", np.zeros(n), np.zeros(n)
    else:
        per_full, per_relaxed = np.full(len(rows), math.inf), np.full(len(rows), math.inf)
        position = np.full(n, -1)
        position[rows] = np.arange(len(rows))
        np.minimum.at(per_full, position[queries.row], found[0])
        np.minimum.at(per_relaxed, position[queries.row], found[1])
        full, relaxed = per_full[inverse], per_relaxed[inverse]
    relaxed = np.where(np.isfinite(relaxed), np.maximum(relaxed, 0.0), 0.0)
    full = np.where(np.isfinite(full), np.maximum(full, relaxed), relaxed)
    # 3.: counterfeit groups excuse full - relaxed, deferred rows their full
    new = bucket < 0
    deferrable = int(new.sum()) if problem.allow_deferrals else 0
    if w > 0:
        deferrable = min(deferrable, math.floor(a / w))
    widest = max([problem.m, *(int(counts.signature_size[b]) for b, o in
                               enumerate(counts.old_rows) if len(o))])
    gain = np.concatenate([[0.0], np.cumsum(np.sort(full - relaxed)[::-1])])
    dropped = np.concatenate([[0.0], np.cumsum(np.sort(full[new])[::-1])])
    d = np.arange(deferrable + 1)
    cfs = np.floor(np.maximum(float(a) - float(w) * d, 0.0) + 1e-9).astype(np.int64)
    excused = float((dropped[d] + gain[np.minimum(cfs * (widest - 1), n)]).max()) if n else 0.0
    bound = float(full.sum()) - excused
    by_capacity = -math.inf
    if separable is not None and method == "separable":
        added, top = capacity(problem, counts, *separable, relaxed, cf_max)
        late = np.concatenate([[0.0], np.cumsum(np.sort(top[new])[::-1])])[deferrable]
        by_capacity = float(relaxed.sum()) + added - float(late)
    duals = np.where(new & problem.allow_deferrals, 0.0, relaxed)
    return RowBound(max(0.0, bound, by_capacity), full, relaxed, duals, excused, method,
                    time.perf_counter() - started, time.process_time() - cpu,
                    max(0.0, bound), max(0.0, by_capacity))
