"""Exact pricing of one QI's columns by intervals, many families in one sweep.

The pricing step of :mod:`republish.models.whole_release_separable_bound` (one relaxation
per QI of a release step; m-invariance paper, Xiao & Tao, SIGMOD 2007, §4.1-4.3 for the
rules its columns follow). In one dimension a column lies in an interval ``[x_p, x_t]`` of
the QI's distinct coordinates, and its reduced cost is ``c(k)·f(x_p, x_t) + |σ|·slot -
Σ_rows w``: for every ``p``, ``t`` and anchor pool ``j`` holding a type at ``x_p``, the
best column takes pool ``j``'s best type at ``x_p`` and the best ``k - 1`` other pools'
best types in ``[x_p, x_t]``. That is ``O(P²·V·k)`` per family, whatever the number of
rows. Not in the paper.

A release of 200 rows has one family per bucket (one pool per value of its signature, its
old rows and the new rows of that value) and one of all-new columns, each of a few
positions: priced one by one, the sweep spent its time in numpy's per-call overhead (0.85
ms a family, 1.9 of 2.5 s to converge on a later release at m = 6). Families are
therefore padded to common shapes and priced together, ``CHUNK_ELEMENTS`` array cells at
a time: a padded position holds no type and an interval reaching it has infinite extent,
a padded pool holds no type, and a row count outside a family's ``lo..hi`` is never
taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["IntervalFamily", "price_families"]

#: Cells of the largest array of one chunk of families (``F·P²·J·S``).
CHUNK_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class IntervalFamily:
    """A family's pools as type arrays, its row counts ``lo..hi`` and ``|σ|`` (0: all new,
    ``max(m, k)``); ``positions``: how many distinct coordinates its types take."""

    pools: tuple[np.ndarray, ...]
    lo: int
    hi: int
    signature: int
    positions: int


@dataclass(frozen=True)
class Priced:
    """Every priced class with a finite least reduced cost: the class (``value·P +
    position``), that cost, a column reaching it (type indices, ``-1`` pads) and the
    column's family's ``|σ|`` field."""

    classes: np.ndarray
    least: np.ndarray
    members: np.ndarray
    signature: np.ndarray


def price_families(families: Sequence[IntervalFamily], position: np.ndarray,
                   value: np.ndarray, coordinates: int, w: np.ndarray, extent: np.ndarray,
                   slot: float, m: int, ncp: bool) -> Priced:
    """The least reduced cost of every class of ``families`` (module docstring). ``position``
    and ``value``: each type's coordinate index and value; ``w``: each type's dual part
    (``-inf``: not in any column); ``extent[p, t]``: the extent of ``x_p..x_t``; ``slot``:
    the charge per slot of ``σ``; ``ncp``: a column is charged by its rows, not ``|σ|``."""
    width = max((f.hi for f in families), default=1)
    found = [Priced(np.zeros(0, np.int64), np.zeros(0), np.zeros((0, width), np.int64),
                    np.zeros(0, np.int64))]
    for chunk in _chunks(families):
        priced = _sweep(chunk, position, value, coordinates, w, extent, slot, m, ncp)
        pad = np.full((len(priced.members), width), -1, np.int64)
        pad[:, :priced.members.shape[1]] = priced.members
        found.append(Priced(priced.classes, priced.least, pad, priced.signature))
    return Priced(*(np.concatenate([getattr(p, name) for p in found])
                    for name in ("classes", "least", "members", "signature")))


def _chunks(families: Sequence[IntervalFamily]) -> list[list[IntervalFamily]]:
    """Families of the same pools and row counts together (padding the all-new family's
    pools and row counts onto the buckets' took 60 % more time at m = 7), fewest
    positions first, each chunk within ``CHUNK_ELEMENTS``."""
    chunks: list[list[IntervalFamily]] = []
    chunk: list[IntervalFamily] = []
    for family in sorted(families, key=lambda f: (len(f.pools), f.lo, f.hi, f.positions)):
        shape = (len(family.pools), family.lo, family.hi)
        pools, sizes = len(family.pools), family.hi - family.lo + 1
        if chunk and ((len(chunk[0].pools), chunk[0].lo, chunk[0].hi) != shape or (
                len(chunk) + 1) * family.positions ** 2 * pools * sizes > CHUNK_ELEMENTS):
            chunks.append(chunk)
            chunk = []
        chunk.append(family)
    return [*chunks, chunk] if chunk else chunks


def _sweep(chunk: Sequence[IntervalFamily], position: np.ndarray, value: np.ndarray,
           coordinates: int, w: np.ndarray, extent: np.ndarray, slot: float, m: int,
           ncp: bool) -> Priced:
    n_family, n_pool = len(chunk), max(len(f.pools) for f in chunk)
    # every (family, pool, type), then each (family, position, pool)'s best type
    sizes_of = [[len(pool) for pool in f.pools] for f in chunk]
    family_of = np.repeat(np.arange(n_family), [sum(s) for s in sizes_of])
    pool_of = np.concatenate([np.repeat(np.arange(len(s)), s) for s in sizes_of])
    member = np.concatenate([pool for f in chunk for pool in f.pools])
    finite = np.isfinite(w[member])
    family_of, pool_of, member = family_of[finite], pool_of[finite], member[finite]
    cell = (family_of * coordinates + position[member]) * n_pool + pool_of
    order = np.lexsort((w[member], cell))  # by cell, the best last
    cell, member = cell[order], member[order]
    last = np.r_[cell[1:] != cell[:-1], True]
    cell, member = cell[last], member[last]
    # each family's present positions, in coordinate order, padded at the end
    where, row = np.unique(cell // n_pool, return_inverse=True)
    family_at = where // coordinates
    local = np.arange(len(where)) - np.searchsorted(family_at, family_at)
    positions = int(local.max()) + 1 if len(local) else 1
    present = np.full((n_family, positions), -1, np.int64)
    present[family_at, local] = where % coordinates
    best = np.full((n_family, positions, n_pool), -np.inf)  # B[f, p, j] and its type
    chosen = np.full((n_family, positions, n_pool), -1, np.int64)
    best[family_at[row], local[row], cell % n_pool] = w[member]
    chosen[family_at[row], local[row], cell % n_pool] = member
    steps = np.arange(positions)
    lower = steps[None, :] < steps[:, None]  # t < p
    # S[f, p, t, j]: pool j's best over [x_p, x_t] (t >= p), at position `source`
    windowed = np.where(lower[None, :, :, None], -np.inf, best[:, None, :, :])
    span = np.maximum.accumulate(windowed, axis=2)
    source = np.maximum.accumulate(np.where(windowed == span, steps[None, None, :, None], 0),
                                   axis=2)
    order = np.argsort(-span, axis=3, kind="stable")
    with np.errstate(invalid="ignore"):
        prefix = np.concatenate([np.zeros((*span.shape[:3], 1)), np.cumsum(
            np.take_along_axis(span, order, axis=3), axis=3)], axis=3)
    # pool j's place in that order: the best k - 1 other pools are the first k - 1 of
    # the order without j
    place = np.empty_like(order)
    np.put_along_axis(place, order, np.arange(n_pool), axis=3)
    padded = present < 0
    lengths = extent[present[:, :, None], present[:, None, :]]
    lengths[padded[:, :, None] | padded[:, None, :]] = np.inf
    # row counts: one range for the chunk, each family's outside its lo..hi never taken
    sizes = np.arange(min(f.lo for f in chunk), max(f.hi for f in chunk) + 1)
    signature = np.array([f.signature for f in chunk], np.int64)
    sigma = np.where(signature[:, None] > 0, signature[:, None],
                     np.maximum(m, sizes)[None, :]).astype(np.float64)
    charged = np.broadcast_to(sizes.astype(np.float64), sigma.shape) if ncp else sigma
    allowed = (sizes[None, :] >= np.array([f.lo for f in chunk])[:, None]) & (
        sizes[None, :] <= np.array([f.hi for f in chunk])[:, None])
    with np.errstate(invalid="ignore"):
        fixed = charged[:, None, None, :] * lengths[..., None] + sigma[:, None, None, :] * slot
    fixed[np.broadcast_to(~allowed[:, None, None, :], fixed.shape)] = np.inf
    tops = sizes - 1
    with np.errstate(invalid="ignore"):
        others = np.where(place[..., None] >= tops, prefix[:, :, :, None, tops],
                          prefix[:, :, :, None, tops + 1] - span[..., None])
        rc = fixed[:, :, :, None, :] - (best[:, :, None, :, None] + others)
    rc[np.isnan(rc) | lower[None, :, :, None, None]] = np.inf
    flat = rc.transpose(0, 1, 3, 2, 4).reshape(n_family, positions, n_pool, -1)
    at = flat.argmin(axis=3)
    least = np.take_along_axis(flat, at[..., None], axis=3)[..., 0]
    least[~np.isfinite(best)] = np.inf
    right, size = np.divmod(at, len(sizes))
    # the column: pool j's best type at x_p, then the other pools by their best in [x_p,
    # x_t], the first k - 1 of them (the order of `prefix`)
    f_index = np.arange(n_family)[:, None, None]
    p_index = steps[None, :, None]
    rank = order[f_index, p_index, right]  # (F, P, j, pools)
    rank = rank[rank != np.arange(n_pool)[None, None, :, None]].reshape(
        n_family, positions, n_pool, n_pool - 1)
    picked = chosen[f_index[..., None], source[f_index[..., None], p_index[..., None],
                                               right[..., None], rank], rank]
    keep = np.arange(n_pool - 1) < (sizes[size] - 1)[..., None]
    hi = int(sizes[-1])
    members = np.full((n_family, positions, n_pool, hi), -1, np.int64)
    members[..., 0] = chosen
    width = min(n_pool - 1, hi - 1)
    members[..., 1:1 + width] = np.where(keep, picked, -1)[..., :width]
    pool_value = np.full((n_family, n_pool), -1, np.int64)
    for at, family in enumerate(chunk):
        pool_value[at, :len(family.pools)] = [int(value[pool[0]]) for pool in family.pools]
    f, p, j = np.nonzero(np.isfinite(least))
    return Priced(pool_value[f, j] * coordinates + present[f, p], least[f, p, j],
                  members[f, p, j], signature[f])
