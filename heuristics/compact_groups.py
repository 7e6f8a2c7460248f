"""Compact m-unique groups for a release without old rows: sort, then group neighbours.

The m-invariance paper (Xiao & Tao, SIGMOD 2007, §4) publishes the first release with the
same steps as the later ones: with no old rows every row is new, Assign opens buckets of
the ``m`` most frequent values and the split cuts each bucket into groups. A bucket's rows
are chosen by value, not by QI, so its groups spread over the QI space. For objective (b)
of the first release (the perimeter of §4.3) a locality-first partition is far cheaper: on
20,000 Adult rows at m = 3 a sort-and-group release cost 2,967 against 19,435 for the
paper's steps (``benchmarks/RESULTS.md``). But its groups have hundreds of signatures
instead of the paper's dozen, so the next releases' buckets are small and need
counterfeits (over 6 releases of Adult: 5 at m = 3; 257 in 4 releases at m = 5, against
none): a deviation offered as a policy (``first_release="compact"``), used as the warm
start of the whole-release model (:mod:`republish.models.whole_release`). Groups of the
paper's value sets filled in this order (templates) cost more than the paper's split
(20,788 against 19,675 at m = 3), so the paper's release stays the default.

Rows are visited in cells of growing width (each QI's span halved ``passes - 1`` times,
then doubled pass by pass), inside a cell in lexicographic order of the QIs, fewest
distinct values first. A pending list collects the cell's rows; as soon as it holds ``m``
distinct values, their first rows form a group (m-unique, no counterfeit). Rows left after
the last pass join the group, lacking their value, whose ``|G| · extent`` grows least.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

__all__ = ["compact_groups"]

Lengths = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _qi_rank(points: np.ndarray) -> np.ndarray:
    """Each row's position in the lexicographic order of the QIs, fewest distinct values
    first (the order inside a cell)."""
    distinct = [len(np.unique(points[:, q])) for q in range(points.shape[1])]
    keys = [points[:, q] for q in sorted(range(points.shape[1]), key=lambda q: distinct[q])]
    rank = np.empty(len(points), dtype=np.int64)
    rank[np.lexsort(keys[::-1])] = np.arange(len(points))
    return rank


def _by_cell(rows: np.ndarray, cells: np.ndarray, rank: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` cell by cell (``cells``: each row's cell coordinates), in ``rank`` order
    inside a cell, and whether each row starts a cell."""
    order = np.lexsort((rank[rows],) + tuple(cells.T[::-1]))
    rows, cells = rows[order], cells[order]
    start = np.ones(len(rows), dtype=bool)
    start[1:] = (cells[1:] != cells[:-1]).any(axis=1)
    return rows, start


def _box(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return high - low


def compact_groups(points: np.ndarray, values: np.ndarray, m: int, *, passes: int = 12,
                   lengths: Lengths | None = None) -> list[np.ndarray] | None:
    """Groups of ``m`` or more distinct ``values`` covering every row (module docstring).

    ``points``: ``(n, d)`` coordinates; ``lengths(low, high)``: per-QI lengths of boxes
    (default ``high - low``), used to place the rows left over. None when a left-over row
    finds no group without its value (the table is then not m-eligible enough)."""
    points = np.asarray(points, dtype=np.float64)
    values = np.asarray(values, dtype=np.int64)
    if m < 1 or passes < 1:
        raise ValueError(f"m and passes must be >= 1; got m={m}, passes={passes}")
    n = len(values)
    if n == 0:
        return []
    lengths = lengths or _box
    low, span, rank = points.min(axis=0), np.ptp(points, axis=0), _qi_rank(points)
    free = np.ones(n, dtype=bool)
    groups: list[list[int]] = []
    for level in range(passes):
        rows = np.flatnonzero(free)
        if level == passes - 1:  # the last cell is the whole table
            cells = np.zeros((len(rows), 1), dtype=np.int64)
        else:
            width = np.where(span > 0, span / 2 ** (passes - 1 - level), 1.0)
            cells = np.floor((points[rows] - low) / width).astype(np.int64)
        rows, start = _by_cell(rows, cells, rank)
        pending: dict[int, deque[int]] = {}
        for i, fresh in zip(rows.tolist(), start.tolist(), strict=True):
            if fresh:
                pending = {}
            pending.setdefault(int(values[i]), deque()).append(i)
            if len(pending) >= m:
                group = [queue.popleft() for queue in pending.values()]
                groups.append(group)
                free[group] = False
                pending = {v: q for v, q in pending.items() if q}
    left = np.flatnonzero(free)
    if len(left) and not groups:
        return None
    members = [np.array(g, dtype=np.int64) for g in groups]
    box_low = np.array([points[g].min(axis=0) for g in members])
    box_high = np.array([points[g].max(axis=0) for g in members])
    sizes = np.array([len(g) for g in members], dtype=np.float64)
    spread = lengths(box_low, box_high).sum(axis=1)
    has = np.zeros((len(members), int(values.max()) + 1), dtype=bool)
    for c, g in enumerate(members):
        has[c, values[g]] = True
    for i in left.tolist():
        grown_low, grown_high = np.minimum(box_low, points[i]), np.maximum(box_high, points[i])
        grown = lengths(grown_low, grown_high).sum(axis=1)
        rise = np.where(has[:, values[i]], np.inf, (sizes + 1) * grown - sizes * spread)
        c = int(np.argmin(rise))
        if not np.isfinite(rise[c]):
            return None
        members[c] = np.append(members[c], i)
        box_low[c], box_high[c], spread[c] = grown_low[c], grown_high[c], grown[c]
        sizes[c] += 1
        has[c, values[i]] = True
    return [np.sort(g) for g in members]
