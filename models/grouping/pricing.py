"""Pricing for the signature-size-2 pairing (:mod:`republish.models.grouping.pairs`).

The pairing is a transportation problem between the distinct QI vectors (*types*) of the
two values, with L1 costs ``c(t, s) = Σ_j |a_tj - b_sj|`` on integer codes. It is solved on
candidate arcs; *pricing* then looks for the arcs left out that have a negative reduced
cost ``c(t, s) - u_t - v_s`` under the duals ``u`` (A types) and ``v`` (B types).

Two pricers, both exact (they miss no negative arc):

* :class:`GridPricing` computes ``min_s c(t, s) - v_s`` for every ``t`` at once with an L1
  *distance transform*. The axes are split into *grid* axes, whose distinct positions span
  a dense grid, and *cell* axes, whose distinct combinations among the B types are few. For
  every cell the transform ``F(x) = min_s |x - b_s|_1 - v_s`` over the grid is separable:
  one forward and one backward pass along each grid axis (Felzenszwalb & Huttenlocher,
  "Distance transforms of sampled functions", Theory of Computing 8, 2012, §2, for the L1
  norm). A type ``t`` then needs one lookup per cell. Discrete QIs (Adult: 72 ages, 41
  countries, the rest under 20 values) make this fast; it is chosen when
  ``cells x grid`` is small.
* :class:`LeafPricing` compares types leaf by leaf (sort-tile-recursive leaves of about
  ``LEAF`` types) and skips pairs of leaves whose box distance cannot beat the duals;
  used for continuous codes, where the grid would be as large as the data.

Both return, besides the new arcs, the duals lowered until every arc of the complete
graph is dual feasible: ``u'_t = min(u_t, min_s c(t, s) - v_s)`` (and ``v'`` likewise), which
give the lower bound of a stopped solve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["GridPricing", "LeafPricing", "Priced", "make_pricing", "distances", "box_gap"]

#: Types per spatial leaf for neighbour search and leaf pricing.
LEAF = 64
#: Most negative arcs added per type (each side) in one pricing round.
PER_ROUND = 6
#: Largest ``cells x grid`` (int64 entries) a grid transform may allocate.
GRID_BUDGET = 12_000_000
INF = np.int64(2) ** 60
#: Targets looked up together (bounds the temporary ``chunk x cells`` array).
_CHUNK = 1024


@dataclass(frozen=True)
class Priced:
    """Arcs ``tails[i] -> heads[i]`` with negative reduced cost, and the lowered duals."""

    tails: np.ndarray
    heads: np.ndarray
    u_lowered: np.ndarray
    v_lowered: np.ndarray


def distances(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``(len(left), len(right))`` L1 distances of integer codes."""
    out = np.abs(left[:, None, 0] - right[None, :, 0]).astype(np.int64)
    for j in range(1, left.shape[1]):
        out += np.abs(left[:, None, j] - right[None, :, j])
    return out


def box_gap(rows: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """L1 distance from the box of ``rows`` to every box ``low..high``."""
    lo, hi = rows.min(axis=0), rows.max(axis=0)
    return np.maximum(0, np.maximum(low - hi, lo - high)).sum(axis=1)


def make_pricing(qa: np.ndarray, qb: np.ndarray) -> GridPricing | LeafPricing:
    """The grid transform when it fits :data:`GRID_BUDGET` both ways, else leaf pricing."""
    grid = GridPricing.plan(qa, qb)
    return grid if grid is not None else LeafPricing(qa, qb)


class _Transform:
    """``F_e(x) = min_s |x - p_s|_1 + g_s`` over the grid axes for every cell ``e`` of the
    *source* points ``p`` (weights ``g``), read at the *target* points."""

    def __init__(self, source: np.ndarray, target: np.ndarray, grid_axes: list[int],
                 positions: list[np.ndarray]) -> None:
        self.grid_axes = grid_axes
        self.cell_axes = [j for j in range(source.shape[1]) if j not in grid_axes]
        self.steps = [np.diff(positions[j]) for j in grid_axes]
        self.shape = tuple(len(positions[j]) for j in grid_axes)
        cells, inverse = np.unique(source[:, self.cell_axes], axis=0, return_inverse=True)
        self.cells = cells.reshape(len(cells), len(self.cell_axes))
        self.source_cell = inverse.ravel()
        self.source_at = self._flat(source, positions)
        self.target_at = self._flat(target, positions)
        # |x_t - cell|_1 on the cell axes does not change between rounds.
        self.cell_distance = np.zeros((len(target), len(self.cells)), dtype=np.int32)
        for k, j in enumerate(self.cell_axes):
            # Codes are at most a few SCALE units apart, well inside int32.
            column = target[:, j].astype(np.int32)
            self.cell_distance += np.abs(column[:, None] - self.cells[:, k].astype(np.int32))

    def _flat(self, points: np.ndarray, positions: list[np.ndarray]) -> np.ndarray:
        index = [np.searchsorted(positions[j], points[:, j]) for j in self.grid_axes]
        if not index:
            return np.zeros(len(points), dtype=np.int64)
        return np.ravel_multi_index(index, self.shape).astype(np.int64)

    def table(self, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(value, source)``, each ``(grid points, cells)``: the least ``|x - p_s|_1 + g_s``
        over the sources ``s`` of each cell at every grid point ``x``, and that ``s``."""
        n_cells = len(self.cells)
        size = int(np.prod(self.shape, dtype=np.int64))
        value = np.full((n_cells, size), INF, dtype=np.int64)
        origin = np.full((n_cells, size), -1, dtype=np.int64)
        value[self.source_cell, self.source_at] = weight
        origin[self.source_cell, self.source_at] = np.arange(len(weight))
        value = value.reshape((n_cells, *self.shape))
        origin = origin.reshape((n_cells, *self.shape))
        for axis, step in enumerate(self.steps, start=1):
            along = np.moveaxis(value, axis, 0)
            source = np.moveaxis(origin, axis, 0)
            # A forward and a backward sweep give the lower envelope of the L1 cones.
            for i in range(1, len(step) + 1):
                _relax(along, source, i, i - 1, step[i - 1])
            for i in range(len(step) - 1, -1, -1):
                _relax(along, source, i, i + 1, step[i])
        # Grid point major, so a target's cells are one contiguous row.
        return (np.ascontiguousarray(value.reshape(n_cells, size).T),
                np.ascontiguousarray(origin.reshape(n_cells, size).T))

    def most_negative(self, weight: np.ndarray, dual: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Targets ``t`` and sources ``s`` of the ``PER_ROUND`` most negative
        ``|x_t - p_s|_1 + g_s - dual_t`` per target (one per cell), and ``dual`` lowered to
        ``min(dual_t, min_s |x_t - p_s|_1 + g_s)``."""
        value, origin = self.table(weight)
        lowered = dual.copy()
        targets, sources = [], []
        for begin in range(0, len(dual), _CHUNK):
            rows = np.arange(begin, min(begin + _CHUNK, len(dual)))
            reduced = np.take(value, self.target_at[rows], axis=0)
            reduced += self.cell_distance[rows]
            reduced -= dual[rows][:, None]
            least = reduced.min(axis=1)
            lowered[rows] += np.minimum(least, 0)
            hit = np.flatnonzero(least < 0)
            if not len(hit):
                continue
            sub = reduced[hit]
            k = min(PER_ROUND, sub.shape[1])
            best = np.argpartition(sub, k - 1, axis=1)[:, :k]
            keep = (np.take_along_axis(sub, best, axis=1) < 0).ravel()
            at = np.repeat(self.target_at[rows[hit]], k)[keep]
            targets.append(np.repeat(rows[hit], k)[keep])
            sources.append(origin[at, best.ravel()[keep]])
        if not targets:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), lowered
        return np.concatenate(targets), np.concatenate(sources), lowered


def _relax(along: np.ndarray, source: np.ndarray, to: int, frm: int, step: np.int64) -> None:
    candidate = along[frm] + step
    better = candidate < along[to]
    np.copyto(along[to], candidate, where=better)
    np.copyto(source[to], source[frm], where=better)


class GridPricing:
    """Exact pricing by L1 distance transforms (see the module docstring)."""

    def __init__(self, by_a: _Transform, by_b: _Transform) -> None:
        self.by_a = by_a  # sources B, targets A: min_s c(t, s) - v_s
        self.by_b = by_b  # sources A, targets B: min_t c(t, s) - u_t

    @classmethod
    def plan(cls, qa: np.ndarray, qb: np.ndarray) -> GridPricing | None:
        """Grid axes for both directions within :data:`GRID_BUDGET`, or None."""
        d = qa.shape[1]
        positions = [np.unique(np.concatenate([qa[:, j], qb[:, j]])) for j in range(d)]
        widest = sorted(range(d), key=lambda j: -len(positions[j]))

        def best(source: np.ndarray, target: np.ndarray) -> _Transform | None:
            chosen, chosen_cost = None, GRID_BUDGET + 1
            for count in range(d + 1):
                grid_axes = sorted(widest[:count])
                cell_axes = [j for j in range(d) if j not in grid_axes]
                grid = int(np.prod([len(positions[j]) for j in grid_axes], dtype=np.int64))
                if grid > GRID_BUDGET:
                    break
                cells = len(np.unique(source[:, cell_axes], axis=0)) if cell_axes else 1
                cost = cells * (grid + len(target))
                if cost < chosen_cost:
                    chosen, chosen_cost = grid_axes, cost
            if chosen is None:
                return None
            return _Transform(source, target, chosen, positions)

        by_a = best(qb, qa)
        by_b = best(qa, qb) if by_a is not None else None
        if by_a is None or by_b is None:
            return None
        return cls(by_a, by_b)

    def price(self, u: np.ndarray, v: np.ndarray) -> Priced:
        rows_a, rows_b, u_lowered = self.by_a.most_negative(-v, u)
        cols_b, cols_a, v_lowered = self.by_b.most_negative(-u, v)
        return Priced(np.concatenate([rows_a, cols_a]), np.concatenate([rows_b, cols_b]),
                      u_lowered, v_lowered)


def _leaves(points: np.ndarray) -> list[np.ndarray]:
    """Sort-tile-recursive leaves of about ``LEAF`` points on the widest (up to 3) axes."""
    n, d = points.shape
    if n <= LEAF or d == 0:
        return [np.arange(n)]
    spread = points.max(axis=0) - points.min(axis=0)
    dims = [int(j) for j in np.argsort(-spread)[: min(3, d)]]
    per = max(1, round((n / LEAF) ** (1 / len(dims))))

    def split(rows: np.ndarray, level: int) -> list[np.ndarray]:
        if level == len(dims) or len(rows) <= LEAF:
            return [rows]
        rows = rows[np.argsort(points[rows, dims[level]], kind="stable")]
        parts = np.array_split(rows, min(per, max(1, len(rows) // LEAF)))
        return [leaf for part in parts for leaf in split(part, level + 1)]

    return split(np.arange(n), 0)


class LeafPricing:
    """Leaves of ``A ∪ B`` with the box of each side: neighbour search and leaf pricing."""

    def __init__(self, qa: np.ndarray, qb: np.ndarray) -> None:
        n1 = len(qa)
        leaves = _leaves(np.vstack([qa, qb]))
        self.qa, self.qb = qa, qb
        self.a = [leaf[leaf < n1] for leaf in leaves]
        self.b = [leaf[leaf >= n1] - n1 for leaf in leaves]
        self.a_low, self.a_high = self._boxes(self.a, qa)
        self.b_low, self.b_high = self._boxes(self.b, qb)
        self.a_size = np.array([len(x) for x in self.a])
        self.b_size = np.array([len(x) for x in self.b])

    @staticmethod
    def _boxes(parts: list[np.ndarray], codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = codes.shape[1]
        low = np.full((len(parts), d), INF, dtype=np.int64)
        high = np.full((len(parts), d), -INF, dtype=np.int64)
        for t, rows in enumerate(parts):
            if len(rows):
                low[t], high[t] = codes[rows].min(axis=0), codes[rows].max(axis=0)
        return low, high

    def order(self) -> tuple[np.ndarray, np.ndarray]:
        """A and B points in leaf order (nearby points close together)."""
        return np.concatenate(self.a), np.concatenate(self.b)

    def neighbours(self, from_a: bool, count: int, own_weight: np.ndarray,
                   other_weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Arcs from every point to its ``count`` nearest other-side points, and to more of
        them until they stand for twice its own weight (a type of many rows needs many
        partners): (A, B) arcs."""
        mine, other = (self.a, self.b) if from_a else (self.b, self.a)
        codes, other_codes = (self.qa, self.qb) if from_a else (self.qb, self.qa)
        low, high = (self.b_low, self.b_high) if from_a else (self.a_low, self.a_high)
        leaf_weight = np.array([other_weight[rows].sum() for rows in other])
        tails, heads = [], []
        for rows in mine:
            if not len(rows):
                continue
            need = 2 * own_weight[rows]
            enough = max(3 * count, int(need.max()) + count)
            gap = box_gap(codes[rows], low, high)
            chosen, total = [], 0
            for leaf in np.argsort(gap, kind="stable").tolist():
                if leaf_weight[leaf]:
                    chosen.append(other[leaf])
                    total += int(leaf_weight[leaf])
                    if total >= enough:
                        break
            targets = np.concatenate(chosen)
            order = np.argsort(distances(codes[rows], other_codes[targets]), axis=1,
                               kind="stable")
            weight = other_weight[targets][order]
            before = np.cumsum(weight, axis=1) - weight
            take = (np.arange(len(targets)) < count)[None, :] | (before < need[:, None])
            tails.append(np.repeat(rows, take.sum(axis=1)))
            heads.append(targets[order[take]])
        if not tails:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        t, h = np.concatenate(tails), np.concatenate(heads)
        return (t, h) if from_a else (h, t)

    def price(self, u: np.ndarray, v: np.ndarray) -> Priced:
        """Arcs with reduced cost ``c - u_t - v_s < 0``: the most negative few per A point
        and per B point. Leaf pairs whose box distance beats the duals are skipped."""
        n2 = len(self.qb)
        v_max = np.array([v[rows].max() if len(rows) else -INF for rows in self.b])
        row_t, row_h = [], []
        col_val = np.full((PER_ROUND, n2), INF)
        col_idx = np.zeros((PER_ROUND, n2), dtype=np.int64)
        u_lowered = u.copy()
        for rows in self.a:
            if not len(rows):
                continue
            gap = box_gap(self.qa[rows], self.b_low, self.b_high)
            leaves = np.flatnonzero((gap - u[rows].max() - v_max < 0) & (self.b_size > 0))
            if not len(leaves):
                continue
            cols = np.concatenate([self.b[leaf] for leaf in leaves.tolist()])
            reduced = distances(self.qa[rows], self.qb[cols])
            reduced -= u[rows][:, None]
            reduced -= v[cols][None, :]
            mask = reduced < 0
            if not mask.any():
                continue
            u_lowered[rows] += np.minimum(reduced.min(axis=1), 0)
            k = min(PER_ROUND, len(cols))
            best = np.argpartition(reduced, k - 1, axis=1)[:, :k]
            keep = (np.take_along_axis(reduced, best, axis=1) < 0).ravel()
            row_t.append(np.repeat(rows, k)[keep])
            row_h.append(cols[best.ravel()][keep])
            hit = np.flatnonzero(mask.any(axis=0))
            sub = reduced[:, hit]
            kc = min(PER_ROUND, len(rows))
            pick = np.argpartition(sub, kc - 1, axis=0)[:kc]
            target = cols[hit]
            merged_val = np.vstack([col_val[:, target], np.take_along_axis(sub, pick, axis=0)])
            merged_idx = np.vstack([col_idx[:, target], rows[pick]])
            sel = np.argpartition(merged_val, PER_ROUND - 1, axis=0)[:PER_ROUND]
            col_val[:, target] = np.take_along_axis(merged_val, sel, axis=0)
            col_idx[:, target] = np.take_along_axis(merged_idx, sel, axis=0)
        found = col_val < 0
        v_lowered = v + np.minimum(col_val.min(axis=0), 0)
        tails = np.concatenate([*row_t, col_idx[found]]).astype(np.int64)
        heads = np.concatenate([*row_h, np.nonzero(found)[1]]).astype(np.int64)
        return Priced(tails, heads, u_lowered, v_lowered)
