"""Which boxes cover which points: a grid join in rank space.

The intersection attack (:mod:`republish.audit.intersection`) needs, for every distinct QI
point of the knowledge table, the published boxes whose generalized QIs cover it. Points
and boxes are moved to rank space (per QI, the index among the distinct point values), so
containment is an integer comparison. The join grid is the cheapest of the grids over one
to three QIs, its cost (candidate pairs plus expanded cells) computed exactly with prefix
sums; every box is expanded into the grid cells it overlaps, the points of those cells are
its candidates, and an exact containment test on the QIs the grid does not resolve keeps
the covering pairs, in chunks of bounded size.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["CHUNK", "GRID_CELLS", "covering_pairs"]

#: Cells of a join grid; bounds the memory of the grid and the per-box expansion.
GRID_CELLS = 1 << 17
#: Candidate pairs tested per chunk of the join.
CHUNK = 1 << 22


def _ranks(
    points: np.ndarray, low: np.ndarray, high: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rank space: per QI, a point's index among the distinct point values and every
    box's first and last covered index, so containment is an integer comparison.
    Also the number of distinct values per QI."""
    p, d = points.shape
    point_rank = np.empty((p, d), dtype=np.int32)
    box_low = np.empty(low.shape, dtype=np.int32)
    box_high = np.empty(high.shape, dtype=np.int32)
    distinct_counts = np.empty(d, dtype=np.int64)
    for j in range(d):
        distinct, inverse = np.unique(points[:, j], return_inverse=True)
        point_rank[:, j] = inverse.reshape(-1)
        box_low[:, j] = np.searchsorted(distinct, low[:, j], side="left")
        box_high[:, j] = np.searchsorted(distinct, high[:, j], side="right") - 1
        distinct_counts[j] = len(distinct)
    return point_rank, box_low, box_high, distinct_counts


def _grid_cost(
    point_bins: list[np.ndarray],
    box_low: list[np.ndarray],
    box_high: list[np.ndarray],
    shape: tuple[int, ...],
) -> float:
    """Exact candidate pairs plus expanded cells of a grid join (prefix sums)."""
    histogram = np.bincount(
        np.ravel_multi_index(tuple(point_bins), shape), minlength=int(np.prod(shape))
    ).reshape(shape)
    prefix = np.pad(histogram, [(1, 0)] * len(shape))
    for axis in range(len(shape)):
        prefix = np.cumsum(prefix, axis=axis)
    candidates = np.zeros(len(box_low[0]), dtype=np.int64)
    for corner in itertools.product((0, 1), repeat=len(shape)):
        index = tuple(
            hi + 1 if c else lo for c, lo, hi in zip(corner, box_low, box_high, strict=True)
        )
        sign = (-1) ** (len(shape) - sum(corner))
        candidates += sign * prefix[index]
    cells = np.prod([hi - lo + 1 for lo, hi in zip(box_low, box_high, strict=True)], axis=0)
    return float(np.sum(candidates) + np.sum(cells))


def _ragged_arange(lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(n)`` for every ``n`` in ``lengths``."""
    total = int(lengths.sum())
    starts = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)


@dataclass(frozen=True)
class _Grid:
    """The chosen join grid: its QIs, bins of points, per-QI bin ranges of boxes, and
    which QIs it resolves exactly (one bin per distinct value: no check needed)."""

    dims: tuple[int, ...]
    shape: tuple[int, ...]
    point_bins: list[np.ndarray]
    box_low: list[np.ndarray]
    box_high: list[np.ndarray]
    exact: tuple[bool, ...]


def _plan(
    point_rank: np.ndarray, box_low: np.ndarray, box_high: np.ndarray, distinct: np.ndarray
) -> _Grid:
    """The cheapest grid over one to three QIs (among the four best single QIs)."""
    d = point_rank.shape[1]
    binned: dict[tuple[int, int], tuple[int, np.ndarray, np.ndarray, np.ndarray]] = {}

    def bin_dimension(j: int, bins: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        if (j, bins) not in binned:
            if distinct[j] <= bins:
                binned[j, bins] = (int(distinct[j]), point_rank[:, j], box_low[:, j],
                                   box_high[:, j])
            else:  # point-mass quantiles of the ranks
                quantiles = np.linspace(0.0, 1.0, bins + 1)[:-1]
                edges = np.unique(np.quantile(point_rank[:, j], quantiles, method="lower"))
                binned[j, bins] = (
                    len(edges),
                    np.searchsorted(edges, point_rank[:, j], side="right") - 1,
                    np.searchsorted(edges, box_low[:, j], side="right") - 1,
                    np.searchsorted(edges, box_high[:, j], side="right") - 1,
                )
        return binned[j, bins]

    def grid(dims: tuple[int, ...]) -> tuple[float, _Grid]:
        per_dim = max(2, int(round(GRID_CELLS ** (1.0 / len(dims)))))
        parts = [bin_dimension(j, per_dim) for j in dims]
        shape = tuple(part[0] for part in parts)
        plan = _Grid(
            dims=dims,
            shape=shape,
            point_bins=[part[1] for part in parts],
            box_low=[part[2] for part in parts],
            box_high=[part[3] for part in parts],
            exact=tuple(bool(distinct[j] == size) for j, size in zip(dims, shape, strict=True)),
        )
        return _grid_cost(plan.point_bins, plan.box_low, plan.box_high, shape), plan

    singles = sorted((grid((j,)) + (j,) for j in range(d)), key=lambda item: item[0])
    best_cost, best, _ = singles[0]
    chosen = sorted(item[2] for item in singles[:4])
    for k in (2, 3):
        for dims in itertools.combinations(chosen, k):
            cost, candidate = grid(dims)
            if cost < best_cost:
                best_cost, best = cost, candidate
    return best


def _covering_chunks(
    points: np.ndarray, low: np.ndarray, high: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pairs ``(point, box)`` with the box covering the point, in bounded chunks."""
    points = np.asarray(points, dtype=np.float64)
    if len(points) == 0 or len(low) == 0:
        return
    point_rank, rank_low, rank_high, distinct = _ranks(points, low, high)
    # Boxes covering no point value on some QI drop out here, so every bin range is valid.
    useful = np.flatnonzero(np.all(rank_low <= rank_high, axis=1))
    if not len(useful):
        return
    rank_low, rank_high = rank_low[useful], rank_high[useful]
    plan = _plan(point_rank, rank_low, rank_high, distinct)
    shape, k = plan.shape, len(plan.shape)
    point_cell = np.ravel_multi_index(tuple(plan.point_bins), shape)
    order = np.argsort(point_cell, kind="stable")
    population = np.bincount(point_cell, minlength=int(np.prod(shape)))
    start = np.cumsum(population) - population

    # Expand every box into the grid cells it overlaps, one QI at a time.
    box = np.arange(len(useful))
    cell_parts: list[np.ndarray] = []
    for axis in range(k):
        lo = plan.box_low[axis][box]
        span = plan.box_high[axis][box] - lo + 1
        offset = _ragged_arange(span)
        box = np.repeat(box, span)
        cell_parts = [np.repeat(part, span) for part in cell_parts]
        cell_parts.append(np.repeat(lo, span) + offset)
    cell = np.ravel_multi_index(tuple(cell_parts), shape)
    keep = population[cell] > 0
    box, cell = box[keep], cell[keep]

    checked = [j for j in range(points.shape[1])
               if not any(j == g and e for g, e in zip(plan.dims, plan.exact, strict=True))]
    lengths = population[cell]
    boundaries = np.searchsorted(np.cumsum(lengths), np.arange(CHUNK, int(lengths.sum()), CHUNK))
    for part_box, part_cell, part_len in zip(
        np.split(box, boundaries), np.split(cell, boundaries), np.split(lengths, boundaries),
        strict=True,
    ):
        candidate_box = np.repeat(part_box, part_len)
        candidate_point = order[np.repeat(start[part_cell], part_len) + _ragged_arange(part_len)]
        inside = np.ones(len(candidate_box), dtype=bool)
        for j in checked:
            rank = point_rank[candidate_point, j]
            inside &= (rank_low[candidate_box, j] <= rank) & (rank <= rank_high[candidate_box, j])
        yield candidate_point[inside], useful[candidate_box[inside]]


def covering_pairs(
    points: np.ndarray, low: np.ndarray, high: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``(point, box)`` with ``low[box] <= points[point] <= high[box]``."""
    chunks = list(_covering_chunks(points, low, high))
    if not chunks:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return (np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks]))
