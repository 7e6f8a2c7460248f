"""Every column of a family of the whole-release model, enumerated a row at a time and
vectorized, with each column's box: the table of :mod:`republish.models.
whole_release_tables` (its module docstring says what the table is for).

A column is a set of rows of distinct pools (sensitive values) of one family (Xiao & Tao,
SIGMOD 2007, §4: an m-unique group, with an old row where the family is a bucket's);
each column of ``k`` rows extends one of ``k - 1`` by a later row, so each arises once,
from its sorted prefix.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from republish.models.whole_release_counts import Extent, Family

__all__ = ["BIT_POOLS", "TABLE_CHUNK", "all_columns", "all_columns_and_extents"]

#: Tables are built and costed this many candidate columns at a time. Temporaries of a
#: million columns each took fresh pages from the OS (glibc maps blocks that large
#: separately, numpy asks for huge pages): the table of the first release of 200 Adult
#: rows at m = 2 took 0.19-0.43 s in a new process, and 0.18-0.30 s in chunks, which
#: reuse their memory.
TABLE_CHUNK = 32_768
#: Pools (values) up to which :func:`all_columns` tracks the ones a column holds as bits of
#: one integer.
BIT_POOLS = 62


def all_columns(family: Family, is_new: np.ndarray, width: int) -> np.ndarray:
    """Every column of ``family``, ``(C, width)`` rows ascending, ``-1`` pads: the subsets
    of ``lo..hi`` rows with at most one row per pool, and an old row when ``need_old``
    (:func:`_column_levels`)."""
    return _stacked([block for block, _ in _column_levels(family, is_new)], width)


def all_columns_and_extents(family: Family, is_new: np.ndarray, width: int,
                            measure: Extent) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`all_columns`, and each column's extent where ``measure`` is a box extent
    (``boxes``: the extent of boxes ``low..high``), else None. The boxes grow with the
    columns, a row at a time, instead of being read from every member again: on the
    770,000 columns of a later release of 200 Adult rows at m = 6 costing them took 0.11 s
    member by member (:func:`republish.objectives.member_ranges`)."""
    boxes = getattr(measure, "boxes", None)
    points = getattr(measure, "points", None)
    if boxes is None or points is None:
        return all_columns(family, is_new, width), None
    levels = list(_column_levels(family, is_new, np.asarray(points, dtype=np.float64)))
    extents = [boxes(low, high) for _, (low, high) in levels if len(low)]
    return _stacked([block for block, _ in levels], width), (
        np.concatenate(extents) if extents else np.zeros(0))


def _stacked(blocks: list[np.ndarray], width: int) -> np.ndarray:
    out = np.full((sum(len(b) for b in blocks), width), -1, dtype=np.int32)
    at = 0
    for block in blocks:
        out[at:at + len(block), :block.shape[1]] = block
        at += len(block)
    return out


Box = tuple[np.ndarray, np.ndarray]


def _column_levels(family: Family, is_new: np.ndarray, points: np.ndarray | None = None
                   ) -> Iterator[tuple[np.ndarray, Box]]:
    """The columns of :func:`all_columns` a size at a time, ``(C, k)`` rows ascending, with
    their boxes on ``points`` (lowest and highest coordinates, ``(C, d)`` each; empty
    without ``points``).

    Each column of ``k`` rows extends one of ``k - 1`` by a later row of a pool it does
    not hold yet, so each subset arises once, from its sorted prefix. Each partial column
    carries the pools it holds as bits (up to BIT_POOLS pools), whether it holds an old
    row, and its box, so a candidate is checked and costed in one step, not member by
    member: on the 770,000 columns of a later release of 200 Adult rows at m = 6 this took
    the enumeration from 0.19 to 0.08 s."""
    rows = np.sort(np.concatenate([p for p in family.pools if len(p)] or
                                  [np.zeros(0, np.int64)])).astype(np.int32)
    pool_of = np.full(int(rows.max(initial=-1)) + 1, -1, dtype=np.int64)
    for index, pool in enumerate(family.pools):
        pool_of[pool] = index
    position = np.full(len(pool_of), -1, dtype=np.int32)
    position[rows] = np.arange(len(rows))
    as_bits = len(family.pools) <= BIT_POOLS
    bit = np.left_shift(np.int64(1), np.maximum(pool_of, 0)) if as_bits else pool_of
    old_row = ~np.asarray(is_new, dtype=bool)
    coordinates = points if points is not None else np.zeros((len(is_new), 0))
    level = rows[:, None]
    held = bit[rows]  # as_bits: the pools each partial column holds
    holds_old = old_row[rows]
    low = high = coordinates[rows]
    for size in range(1, family.hi + 1):
        if size >= max(family.lo, 1):
            yield (level[holds_old], (low[holds_old], high[holds_old])) if \
                family.need_old else (level, (low, high))
        if size == family.hi or not len(level):
            return
        # each partial column takes every later row once, about TABLE_CHUNK candidates at
        # a time
        after = len(rows) - 1 - position[level[:, -1]]
        ends = np.searchsorted(np.cumsum(after),
                               TABLE_CHUNK * np.arange(1, 1 + int(after.sum()) // TABLE_CHUNK))
        pieces: list[list[np.ndarray]] = [[], [], [], [], []]
        for part in np.split(np.arange(len(level)), np.unique(ends)):
            partial, later = level[part], after[part]
            parent = np.repeat(np.arange(len(partial)), later)
            offset = np.arange(len(parent)) - np.repeat(np.cumsum(later) - later, later)
            candidate = rows[np.repeat(position[partial[:, -1]] + 1, later) + offset]
            if as_bits:
                fresh = (held[part][parent] & bit[candidate]) == 0
            else:
                fresh = (pool_of[partial[parent]] != pool_of[candidate][:, None]).all(axis=1)
            parent, candidate = parent[fresh], candidate[fresh]
            into = part[parent]
            pieces[0].append(np.hstack([partial[parent], candidate[:, None]]))
            pieces[1].append(held[into] | bit[candidate] if as_bits else held[:0])
            pieces[2].append(holds_old[into] | old_row[candidate])
            pieces[3].append(np.minimum(low[into], coordinates[candidate]))
            pieces[4].append(np.maximum(high[into], coordinates[candidate]))
        level, held, holds_old, low, high = (np.concatenate(p) for p in pieces)
