"""Exact pricing of the whole-release set-partitioning model by anchors.

The pricing problem of :mod:`republish.models.whole_release_columns` asks for every column
``R`` of a family with ``|σ|·ext(R) - Σ_{i∈R} pi_i <= theta`` (``theta >= 0``), ``ext`` the
box extent ``Σ_q (max_q - min_q)`` (m-invariance paper, §4.3: the perimeter of a group).
Enumerating a family pool by pool (:func:`enumerate_columns`) cannot prune a partial
column before its box has some extent, and a family of all-new rows at ``m >= 3`` has
millions of such partial columns.

Anchor a column at its row of largest price (ties: lowest index), ``a``. Any two rows of
``R`` are within ``ext(R)`` of each other in L1 distance, and with ``k = |R| <= |σ|``,
``lo <= k``::

    |σ|·ext(R) <= theta + Σ pi <= theta + k·pi_a   ⇒   ext(R) <= max(pi_a, 0) + theta/lo

and ``pi_a >= -theta/lo``. So the columns anchored at ``a`` hold ``a`` and rows of no
larger price within that L1 radius of ``a``: usually a few dozen rows once the duals are
those of a good restricted master. Each anchor's columns are enumerated with the anchor
forced into the box from the start, so the reduced-cost pruning bites at the first row.
Every column passing the test is found exactly once (at its anchor): the pricing stays
exact, so a complete round still gives a valid Lagrangian bound.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from republish.models.whole_release_counts import BoxExtent, Extent, Family
from republish.models.whole_release_enumeration import enumerate_columns
from republish.models.whole_release_extent_tables import box_point_lengths

if TYPE_CHECKING:
    from republish.models.whole_release import WholeReleaseProblem

__all__ = ["RcOf", "nearest_columns", "price_by_anchors", "price_families", "pricing_problem",
           "stack_columns"]

#: Slack on the radius test (the duals come from a floating-point LP).
TOLERANCE = 1e-9
#: Columns enumerated at most per anchor and pricing call, and the bisection steps that
#: shrink an anchor's candidate set below that.
ANCHOR_LIMIT = 5_000
BISECTIONS = 12


RcOf = Callable[[np.ndarray], np.ndarray]


def _greedy_reduced_cost(problem: WholeReleaseProblem, family: Family, a: int,
                         near: np.ndarray, pool_of: np.ndarray, rc_of: RcOf) -> float:
    """The least reduced cost of :func:`_greedy_columns` (``inf`` when there is none)."""
    block = _greedy_columns(problem, family, a, near, pool_of)
    return float(np.min(rc_of(block))) if len(block) else math.inf


def _greedy_columns(problem: WholeReleaseProblem, family: Family, a: int, near: np.ndarray,
                    pool_of: np.ndarray) -> np.ndarray:
    """The columns ``a`` plus its ``j`` nearest rows of ``near`` (L1) of distinct pools,
    for every admissible size."""
    distance = np.abs(problem.points[near] - problem.points[a]).sum(axis=1)
    order = np.argsort(distance, kind="stable")
    _, first = np.unique(pool_of[near[order]], return_index=True)
    picked = near[order[np.sort(first)]][:family.hi - 1]
    has_old = np.cumsum(np.append(problem.bucket[a], problem.bucket[picked]) >= 0) > 0
    sizes = [k for k in range(max(family.lo, 1), min(family.hi, len(picked) + 1) + 1)
             if has_old[k - 1] or not family.need_old]
    block = np.full((len(sizes), family.hi), -1, dtype=np.int64)
    for r, k in enumerate(sizes):
        block[r, :k] = np.sort(np.append(picked[:k - 1], a))
    return block


def _best_of_anchor(problem: WholeReleaseProblem, sub: Family, a: int, near: np.ndarray,
                    pool_of: np.ndarray, pi: np.ndarray, theta: float, radius: float,
                    limit: int, deadline: float, rc_of: RcOf, refine: bool = False
                    ) -> tuple[np.ndarray, float] | None:
    """The columns anchored at ``a`` of least reduced cost, and a lower bound on their
    reduced cost (exact when columns are returned).

    ``F(c)``, the columns with ``|σ|·ext - Σ pi <= c``, holds every column of reduced cost
    ``<= c`` (that quantity never exceeds the reduced cost); the search starts at ``c`` =
    ``min(theta, rc of a greedy column)`` and bisects between the largest ``c`` proven
    below every reduced cost (first ``floor``: ``-pi_a`` minus the best other prices) and
    the least ``c`` whose ``F(c)`` was too large. An ``F(c)`` without a column of reduced
    cost ``<= c`` proves every reduced cost ``> c``; without ``refine`` the search ends
    there (column generation only needs the columns; the bound is refined once it has
    converged)."""
    cutoff = min(theta, _greedy_reduced_cost(problem, sub, a, near, pool_of, rc_of))
    others = np.sort(np.maximum(pi[near], 0.0))[::-1][:sub.hi - 1]
    floor = -float(pi[a]) - float(others.sum()) - TOLERANCE
    low, high, c = floor, cutoff, cutoff  # no reduced cost <= low; F(high) too large
    for _ in range(BISECTIONS):
        columns = enumerate_columns(problem, sub, limit=limit, radius=radius, pi=pi,
                                    theta=c, deadline=deadline, first_forced=True,
                                    tight=refine)
        if time.perf_counter() > deadline:
            return None
        if columns is None:
            high = c
        else:
            if len(columns):
                rc = rc_of(columns)
                kept = rc <= c + TOLERANCE * max(1.0, abs(c))
                if kept.any():  # F(c) holds every column of reduced cost <= c
                    return columns[kept], float(rc.min())
            if c >= cutoff or not refine:
                return columns[:0], c  # every reduced cost > c
            low = c  # every reduced cost > c: search higher
        c = (low + high) / 2
    return np.zeros((0, sub.hi), dtype=np.int64), low


def price_by_anchors(problem: WholeReleaseProblem, family: Family, pi: np.ndarray,
                     theta: float, *, limit: int, radius: float = math.inf,
                     deadline: float = math.inf, rc_of: RcOf | None = None,
                     anchors: np.ndarray | None = None, refine: bool = False
                     ) -> tuple[np.ndarray, np.ndarray] | None:
    """The columns of ``family`` with ``|σ|·ext - Σ pi <= theta`` and box extent ``<=
    radius``, as ``(C, hi)`` row indices (``-1`` pads), and per row the least reduced cost
    of the columns anchored at it (``inf``: none found); None past ``limit`` columns or
    ``deadline`` (``time.perf_counter()``).

    With ``rc_of`` (the exact reduced cost of a block of columns, ``>= |σ|·ext - Σ pi``),
    each anchor only keeps columns no worse than ``min(theta, rc(a greedy column))``: its
    best columns, found exactly (column generation needs no more), far fewer when a price
    is large. Without it, every column under ``theta``. ``anchors``: price only the
    columns anchored at these rows (the others' ``least`` stays ``inf``); ``refine``: see
    :func:`_best_of_anchor`, and enumerate with the tight completion bound of
    :func:`~republish.models.whole_release_enumeration.enumerate_columns` (slower per partial
    column, far fewer of them)."""
    if theta < 0:
        raise ValueError(f"theta must be >= 0, got {theta}")
    least = np.full(len(problem.values), math.inf)
    rows = np.concatenate([p for p in family.pools if len(p)]) if family.pools else \
        np.zeros(0, np.int64)
    pool_of = np.full(len(problem.values), -1, dtype=np.int64)
    for index, pool in enumerate(family.pools):
        pool_of[pool] = index
    lo = max(family.lo, 1)
    # rank: anchors by price, then index; only rows ranked after the anchor may join it
    rank = np.empty(len(problem.values), dtype=np.int64)
    order = rows[np.lexsort((rows, -pi[rows]))]
    rank[order] = np.arange(len(order))
    points = problem.points
    found: list[np.ndarray] = []
    total = 0
    wanted = None if anchors is None else set(np.asarray(anchors).tolist())
    for a in order.tolist():
        if pi[a] < -theta / lo - TOLERANCE:
            break  # prices only fall from here
        if wanted is not None and a not in wanted:
            continue
        if time.perf_counter() > deadline:
            return None
        reach = min(max(float(pi[a]), 0.0) + theta / lo, radius) + TOLERANCE
        later = order[rank[a] + 1:]
        near = later[np.abs(points[later] - points[a]).sum(axis=1) <= reach]
        near = near[pool_of[near] != pool_of[a]]
        pools = (np.array([a]), *(near[pool_of[near] == p] for p in range(len(family.pools))
                                  if p != pool_of[a]))
        sub = Family(pools, family.lo, family.hi, family.signature, family.need_old)
        if rc_of is None:
            columns = enumerate_columns(problem, sub, limit=limit - total, radius=radius,
                                        pi=pi, theta=theta, deadline=deadline,
                                        first_forced=True, tight=refine)
            if columns is None:
                return None
        else:
            best = _best_of_anchor(problem, sub, a, near, pool_of, pi, theta, radius,
                                   min(limit - total, ANCHOR_LIMIT), deadline, rc_of,
                                   refine)
            if best is None:
                return None
            columns, least[a] = best
        if len(columns):
            found.append(columns)
            total += len(columns)
    block = np.vstack(found) if found else np.zeros((0, family.hi), dtype=np.int64)
    return block, least


def price_families(problem: WholeReleaseProblem, fams: list[Family], pi: np.ndarray,
                   theta: float, limit: int, radius: float = math.inf,
                   rc_of: RcOf | None = None, deadline: float = math.inf,
                   anchors: np.ndarray | None = None,
                   refine: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`price_by_anchors` over every family of ``fams``: the columns found (one
    block, ``-1`` pads) and per row the least reduced cost of the columns anchored at it
    over all families. None past ``limit`` or ``deadline`` (``time.perf_counter()``)."""
    found, least = [], np.full(len(problem.values), math.inf)
    for family in fams:
        priced = price_by_anchors(problem, family, pi, max(theta, 0.0), limit=limit,
                                  radius=radius, rc_of=rc_of, deadline=deadline,
                                  anchors=anchors, refine=refine)
        if priced is None:
            return None
        found.append(priced[0])
        least = np.minimum(least, priced[1])
    return stack_columns(found), least


def stack_columns(blocks: list[np.ndarray]) -> np.ndarray:
    """Blocks of columns (row indices, ``-1`` pads) of any widths as one ``int64`` block,
    padded to the widest."""
    if not blocks:
        return np.zeros((0, 1), np.int64)
    width = max(c.shape[1] for c in blocks)
    return np.vstack([np.hstack([c, np.full((len(c), width - c.shape[1]), -1)])
                      for c in blocks]).astype(np.int64, copy=False)


def nearest_columns(problem: WholeReleaseProblem, family: Family) -> np.ndarray:
    """Per row ``a`` of ``family``: the columns ``a`` plus its ``j`` nearest rows (L1) of
    distinct other pools, for every admissible size; a start that gives every row a cheap
    column, so the first duals are not inflated by a row covered only by a wide one."""
    pool_of = np.full(len(problem.values), -1, dtype=np.int64)
    for index, pool in enumerate(family.pools):
        pool_of[pool] = index
    rows = np.flatnonzero(pool_of >= 0)
    blocks = [_greedy_columns(problem, family, a, rows[pool_of[rows] != pool_of[a]], pool_of)
              for a in rows.tolist()]
    return np.vstack(blocks) if blocks else np.zeros((0, family.hi), dtype=np.int64)


def pricing_problem(problem: WholeReleaseProblem, extent: Extent | None, table: Extent
                     ) -> WholeReleaseProblem | None:
    """``problem`` with points whose box extent is at most ``extent`` (the problem itself
    for the box extent; the extent's ``box_points``, e.g. hierarchy leaf codes over their
    span, for the perimeter of :mod:`republish.objectives`, with the exact lengths read
    from ``table``, the extent's tabulated form), or None when none is known: then
    missing columns are neither priced nor bounded."""
    if extent is None:
        return problem
    if isinstance(extent, BoxExtent):
        return problem if np.array_equal(extent.points, problem.points) else \
            dataclasses.replace(problem, points=extent.points)
    points = getattr(extent, "box_points", None)
    if points is None or np.shape(points) != np.shape(problem.points):
        return None
    return dataclasses.replace(problem, points=points, box_lengths=box_point_lengths(table))
