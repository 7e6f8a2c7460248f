"""The capacity part of the row bound (:mod:`republish.models.whole_release_row_bound`).

Rows kept in groups inside a cell ``C`` (exact QI points, then hierarchy ancestors with the
numeric QIs free) are at most what the cell's value counts allow (:func:`_excess`): per
bucket, ``g`` groups hold ``<= min(k_u, g)`` old rows of value ``u`` and need
``Σ_u (g - avail_u)^+ <= spare_b`` counterfeits; ``h`` new groups need ``m·h <= Σ_u
min(N_u, h) + spare_new``. So at least ``excess(C)`` rows of ``C`` are deferred or sit in
groups reaching outside ``C``, whose extent is at least ``exit_i(C)`` (a row outside ``C``
differs in a coordinate defining ``C``: a strictly larger ancestor, or the nearest other
numeric value). The validity argument is in the row bound's module docstring (item 4).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from republish.models.whole_release_counts import ReleaseCounts

if TYPE_CHECKING:
    from republish.models.whole_release_problem import WholeReleaseProblem

__all__ = ["Chain", "budget", "capacity", "distinct_rows"]

Chain = tuple[np.ndarray, np.ndarray]  # (levels, n) cell ids and f_q of that cell


def budget(problem: WholeReleaseProblem, counts: ReleaseCounts, cf_max: int
            ) -> tuple[np.ndarray, int]:
    """Counterfeits a bucket's groups (all new groups) may hold at most: ``⌊A*⌋`` minus
    what the other buckets (all buckets) need anyway (``forced``)."""
    forced = counts.forced_counterfeits()
    spare = np.maximum(cf_max - (forced.sum() - forced), 0)
    spare_new = cf_max - int(forced.sum()) if problem.counterfeits_in_new_groups else 0
    return spare, max(spare_new, 0)



def _largest(feasible: Callable[[np.ndarray], np.ndarray], high: np.ndarray) -> np.ndarray:
    """Per entry the largest ``g`` in ``[0, high]`` with ``feasible(g)``, the feasible set
    being an interval from 0 (binary search)."""
    low, high = np.zeros_like(high), high.copy()
    while (low < high).any():
        mid = (low + high + 1) // 2
        ok = feasible(mid)
        low, high = np.where(ok, mid, low), np.where(ok, high, mid - 1)
    return low


def _excess(problem: WholeReleaseProblem, counts: ReleaseCounts, at: np.ndarray,
            cells: int, spare: np.ndarray, wild: int) -> np.ndarray:
    """Per cell, rows that no release can keep in groups inside the cell (at least): a
    bucket's ``g`` groups there hold ``<= min(k_u, g)`` old rows of each value and need
    ``Σ_u (g - available_u)^+ <= spare_b`` counterfeits; ``h`` all-new groups need ``m·h
    <= Σ_u min(N_u, h) + wild`` rows; a new row of ``u`` sits in one of those groups."""
    values, bucket, m, v = problem.values, problem.bucket, problem.m, problem.domain_size
    new = bucket < 0
    new_c = np.zeros((cells, v), dtype=np.int64)
    np.add.at(new_c, (at[new], values[new]), 1)
    kept, room = np.zeros(cells, dtype=np.int64), np.zeros((cells, v), dtype=np.int64)
    if (~new).any():
        width = len(problem.signatures)
        pairs, pat = np.unique(at[~new] * width + bucket[~new], return_inverse=True)
        cell_of, of = pairs // width, pairs % width
        old_c = np.zeros((len(pairs), v), dtype=np.int64)
        np.add.at(old_c, (pat.ravel(), values[~new]), 1)
        sig, avail = counts.in_signature[of], old_c + new_c[cell_of]

        def fits(g: np.ndarray) -> np.ndarray:
            return np.where(sig, np.maximum(g[:, None] - avail, 0), 0).sum(1) <= spare[of]
        g = _largest(fits, old_c.sum(1))
        np.add.at(kept, cell_of, np.minimum(old_c, g[:, None]).sum(1))
        np.add.at(room, cell_of, np.where(sig, g[:, None], 0))
    h = _largest(lambda h: m * h <= np.minimum(new_c, h[:, None]).sum(1) + wild,
                 new_c.sum(1))
    kept += np.minimum(new_c, h[:, None] + room).sum(1)
    return np.maximum(np.bincount(at, minlength=cells) - kept, 0)


def _exits(chain: Chain) -> np.ndarray:
    """``(levels, n)``: the least ``f_q`` of a strictly larger ancestor (inf if none)."""
    lengths = chain[1]
    out = np.full(lengths.shape, math.inf)
    for k in range(len(lengths)):
        for j in range(k + 1, len(lengths)):
            out[k] = np.minimum(out[k], np.where(lengths[j] > lengths[k], lengths[j], math.inf))
    return out


def distinct_rows(coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(coords, axis=0, return_index=True, return_inverse=True)[1:]``: each
    distinct row's first index, in lexicographic order of the rows, and each row's
    distinct row. The columns' ranks are combined into one integer key where their
    product fits, so that one 1-D sort replaces the sort of whole rows (1,000,000 census
    rows: 4.5 s of the row bound went to the latter)."""
    if coords.ndim != 2 or not len(coords):
        _, first, inverse = np.unique(coords, axis=0, return_index=True, return_inverse=True)
        return first, inverse.ravel()
    key = np.zeros(len(coords), dtype=np.int64)
    room = 1
    for column in coords.T:
        _, rank = np.unique(column, return_inverse=True)
        size = int(rank.max()) + 1
        room *= size
        if room >= 2**62:
            _, first, inverse = np.unique(coords, axis=0, return_index=True,
                                          return_inverse=True)
            return first, inverse.ravel()
        key = key * size + rank.ravel()
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def capacity(problem: WholeReleaseProblem, counts: ReleaseCounts, numeric: list[np.ndarray],
              chains: list[Chain], base: np.ndarray, cf_max: int) -> tuple[float, np.ndarray]:
    """Nested cells (exact points, then hierarchy ancestors with numeric QIs free): at
    least ``excess(C)`` rows of a cell ``C`` sit in groups reaching outside it, which cost
    ``>= max(base_i, exit_i(C))``; a row leaving a cell left every smaller one, so
    ``Σ_i ext(G(i)) >= Σ base + Σ_levels Σ_C (excess(C) least increments in C)``. Returns
    that sum's increments and each row's cost at the top level."""
    n = len(problem.values)
    spare, wild = budget(problem, counts, cf_max)
    exits = [_exits(c) for c in chains]
    gaps = []
    for x in numeric:
        distinct = np.unique(x)
        at = np.searchsorted(distinct, x)
        below = np.where(at > 0, x - distinct[np.maximum(at - 1, 0)], math.inf)
        above = np.where(at < len(distinct) - 1,
                         distinct[np.minimum(at + 1, len(distinct) - 1)] - x, math.inf)
        gaps.append(np.minimum(below, above))
    level = [-1] * len(chains)  # -1: the exact points, then every chain at its level 0
    coords = np.column_stack([*numeric, *(c[0][0] for c in chains), np.zeros(n)])
    key = distinct_rows(coords)[1]
    exit_ = np.min([*gaps, *(e[0] for e in exits), np.full(n, math.inf)], axis=0)
    cost, added = base.copy(), 0.0
    while True:
        exit_ = np.where(np.isfinite(exit_), exit_, 0.0)
        step = np.maximum(cost, exit_)
        delta = step - cost
        cells, at = np.unique(key, return_inverse=True)
        excess = _excess(problem, counts, at.ravel(), len(cells), spare, wild)
        order = np.lexsort((delta, at))
        first = np.searchsorted(at[order], at[order])
        added += float(delta[order][np.arange(n) - first < excess[at[order]]].sum())
        cost = step
        up = [q for q, c in enumerate(chains) if level[q] + 1 < len(c[0])]
        if not up or len(cells) <= 1:
            return added, cost
        if min(level) < 0:
            level = [0] * len(chains)
        else:
            q = min(up, key=lambda q: float(chains[q][1][level[q] + 1].mean()))
            level[q] += 1
        key = np.zeros(n, dtype=np.int64)
        for c, k in zip(chains, level, strict=True):
            key = key * (int(c[0][k].max(initial=0)) + 1) + c[0][k]
        exit_ = np.min([e[k] for e, k in zip(exits, level, strict=True)], axis=0)
