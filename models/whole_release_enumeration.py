"""The columns of one family of the whole-release model (:mod:`republish.models.
whole_release_counts`, :func:`~republish.models.whole_release_counts.families`),
enumerated pool by pool with pruning by box extent or by reduced cost: the start of column
generation, reduced-cost fixing and the anchor pricing of
:mod:`republish.models.whole_release_pricing` (the set-partitioning model of Xiao & Tao,
SIGMOD 2007, §4, as stated in :mod:`republish.models.whole_release`)."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np

from republish.models.whole_release_counts import Family

if TYPE_CHECKING:
    from republish.models.whole_release_problem import WholeReleaseProblem

__all__ = ["ENUMERATION_BLOCK", "enumerate_columns"]


def enumerate_columns(problem: WholeReleaseProblem, family: Family, *, limit: int,
                      radius: float = math.inf, pi: np.ndarray | None = None,
                      theta: float = math.inf, deadline: float = math.inf,
                      first_forced: bool = False, tight: bool = False) -> np.ndarray | None:
    """The columns of ``family`` (``(C, hi)`` row indices, ``-1`` pads) of box extent
    ``<= radius`` and, given row prices ``pi``, with ``|σ|·extent - Σ_{i∈R} pi_i <= theta``
    (the extent: the problem's ``box_lengths`` of the box, else its widths); ``None`` when
    more than ``limit`` partial columns arise.

    Built one pool at a time; a partial column ``P`` is dropped when no completion can pass:
    its box only grows, and the rows still to come add at most the ``hi - |P|`` largest
    per-pool maxima of ``max(pi, 0)`` (with ``tight``, at most what :func:`_tight_gain`
    allows, which also charges each row for the extent it adds). ``None`` too once
    ``time.perf_counter()`` passes ``deadline``. ``first_forced``: every column holds a row
    of the first pool."""
    pools = [p for p in family.pools if len(p)]
    points, old_row = problem.points, problem.bucket >= 0
    old_later = np.append(np.cumsum([old_row[p].any() for p in pools][::-1])[::-1][1:], 0) > 0
    gain = np.zeros((len(pools) + 1, family.hi + 1))  # gain[t, k]: k best of pools t..
    if pi is not None:
        best = [float(np.maximum(pi[p], 0).max()) for p in pools]
        for t in range(len(pools)):
            top = np.sort(best[t:])[::-1][:family.hi]
            gain[t, 1:len(top) + 1] = np.cumsum(top)
            gain[t, len(top) + 1:] = gain[t, len(top)]
    members = np.zeros((1, 0), dtype=np.int64)
    size, has_old, paid = np.zeros(1, np.int64), np.zeros(1, bool), np.zeros(1)
    low = np.full((1, points.shape[1]), np.inf)
    high = np.full((1, points.shape[1]), -np.inf)
    for t, rows in enumerate(pools):
        if time.perf_counter() > deadline:
            return None
        grow = np.flatnonzero(size < family.hi)
        skip = np.flatnonzero(size + len(pools) - t - 1 >= family.lo) if t or not \
            first_forced else np.zeros(0, np.int64)
        if len(skip) + len(grow) * len(rows) > 20 * limit:
            return None
        # the candidates (a parent, then a row of this pool or none) in blocks, with the
        # deadline checked between them: one step over millions of candidates took
        # 10-17 s (reduced-cost fixing at m = 4 past a 30 s budget)
        per_block = max(1, ENUMERATION_BLOCK // max(len(rows), 1))
        blocks = [(skip, np.full(len(skip), -1))] + [
            (np.repeat(part, len(rows)), np.tile(rows, len(part)))
            for part in np.split(grow, np.arange(per_block, len(grow), per_block))]
        kept = []
        for parent, row in blocks:  # an empty block keeps the arrays' shapes
            if time.perf_counter() > deadline:
                return None
            taken = row >= 0
            at = np.where(taken, row, 0)
            new_low = np.where(taken[:, None], np.minimum(low[parent], points[at]),
                               low[parent])
            new_high = np.where(taken[:, None], np.maximum(high[parent], points[at]),
                                high[parent])
            new_size = size[parent] + taken
            spread = np.where(new_size > 0, (new_high - new_low).sum(axis=1), 0.0)
            new_paid = paid[parent] + (np.where(taken, pi[at], 0.0) if pi is not None
                                       else 0.0)
            new_old = has_old[parent] | (taken & old_row[at])
            ok = spread <= radius
            if pi is not None:
                sigma = family.signature or np.maximum(problem.m, new_size)
                if problem.box_lengths is not None and len(new_size):  # exact, >= widths
                    some = new_size[:, None] > 0
                    spread = np.where(new_size > 0, _box_extent(
                        problem, np.where(some, new_low, 0.0), np.where(some, new_high, 0.0)),
                        0.0)
                future = gain[t + 1, family.hi - new_size]
                if tight and first_forced and t + 1 < len(pools):
                    # only where the loose test passes: the tight one costs a row per
                    # candidate
                    loose = ok & (sigma * spread - new_paid - future <= theta + 1e-9)
                    future = future.copy()
                    future[loose] = np.minimum(future[loose], _tight_gain(
                        problem, family, pools[t + 1:], pi, new_low[loose],
                        new_high[loose], spread[loose], new_size[loose], deadline))
                ok &= sigma * spread - new_paid - future <= theta + 1e-9
            if family.need_old:
                ok &= new_old | old_later[t]
            kept.append((np.hstack([members[parent[ok]], row[ok, None]]), new_size[ok],
                         new_old[ok], new_paid[ok], new_low[ok], new_high[ok]))
            if sum(len(k[0]) for k in kept) > limit:
                return None
        members, size, has_old, paid, low, high = (
            np.concatenate([k[i] for k in kept]) for i in range(6))
    chosen = (size >= max(family.lo, 1)) & (has_old | np.bool_(not family.need_old))
    big = np.iinfo(np.int64).max
    ordered = np.sort(np.where(members[chosen] < 0, big, members[chosen]), axis=1)
    ordered = ordered[:, :family.hi] if ordered.shape[1] >= family.hi else np.hstack(
        [ordered, np.full((len(ordered), family.hi - ordered.shape[1]), big)])
    return np.where(ordered == big, -1, ordered)


def _box_extent(problem: WholeReleaseProblem, low: np.ndarray, high: np.ndarray
                ) -> np.ndarray:
    """The extent of boxes ``low..high`` (shape ``(..., d)``) in ``problem.points``: the
    problem's ``box_lengths`` summed over QIs, else the widths."""
    if problem.box_lengths is None:
        return np.asarray(high - low).sum(axis=-1)
    return problem.box_lengths(low, high).sum(axis=-1)


#: Candidates (partial column, next row) formed at once by :func:`enumerate_columns`,
#: between two looks at its deadline.
ENUMERATION_BLOCK = 262_144
#: Partial columns per block of :func:`_tight_gain` (a block holds ``block × rows × d``).
TIGHT_BLOCK = 1_000


def _tight_gain(problem: WholeReleaseProblem, family: Family, later: list[np.ndarray],
                pi: np.ndarray, low: np.ndarray, high: np.ndarray, spread: np.ndarray,
                size: np.ndarray, deadline: float = math.inf) -> np.ndarray:
    """Per partial column (box ``low..high`` of extent ``spread``, ``size`` rows), an upper
    bound on ``Σ_{x∈S} pi_x - |σ|·(ext(box ∪ S) - spread)`` over the rows ``S`` still to
    come (at most one per pool of ``later``, ``k = hi - size`` of them).

    The extent grows by at least the largest single increase ``d_x = ext(box ∪ {x}) -
    spread``, which is at least their mean, so the quantity is at most ``Σ_{x∈S} (pi_x -
    |σ|·d_x / k)``, and ``|σ| >= m`` (or the family's signature): the ``k`` largest
    per-pool maxima of ``max(0, pi_x - |σ|·d_x / k)``. Past ``deadline`` the partial
    columns left get ``inf`` (no tightening: the caller keeps its loose bound), since a
    block of a few thousand rows takes a noticeable time and the caller's own deadline
    is checked only between pools."""
    sigma = family.signature or problem.m
    rows = np.concatenate(later)
    pool = np.repeat(np.arange(len(later)), [len(p) for p in later])
    useful = pi[rows] > 0
    rows, pool = rows[useful], pool[useful]
    out = np.zeros(len(size))
    if not len(rows):
        return out
    x = problem.points[rows]
    left = np.maximum(family.hi - size, 1).astype(np.float64)
    for start in range(0, len(size), TIGHT_BLOCK):
        part = slice(start, start + TIGHT_BLOCK)
        if time.perf_counter() > deadline:
            out[start:] = math.inf
            break
        joined_low = np.minimum(low[part, None, :], x[None])
        joined_high = np.maximum(high[part, None, :], x[None])
        joined = _box_extent(problem, joined_low, joined_high)
        g = np.maximum(0.0, pi[rows][None] - sigma * (joined - spread[part, None])
                       / left[part, None])
        per_pool = np.zeros((g.shape[0], len(later)))
        np.maximum.at(per_pool.T, pool, g.T)
        ordered = -np.sort(-per_pool, axis=1)
        sums = np.hstack([np.zeros((len(ordered), 1)), np.cumsum(ordered, axis=1)])
        take = np.minimum(family.hi - size[part], len(later))
        out[part] = sums[np.arange(len(ordered)), np.maximum(take, 0)]
    return out
