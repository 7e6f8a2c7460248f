"""Exact pricing of a family's larger columns by extending its tabled smaller ones.

The first release of 200 rows at m = 3 has about a million columns of three rows, which
:mod:`republish.models.whole_release_tables` tabulates, but tens of millions of four and
billions of five. A column ``C`` of ``t`` rows, all new (``|σ| = max(m, t)``), holds its
``k`` lowest rows as a tabled column ``P`` (any ``k`` of its rows have distinct values),
and its extent is at least ``P``'s, so with prices ``pi``::

    rc(C) >= |σ|·ext(C) - Σ_{C} pi >= |σ|·ext(P) - Σ_{P} pi - (the t - k largest
                                        max(pi, 0) among the rows after P's last)

A partial column is extended only while that bound is below ``theta`` for some size
``t``. A candidate next row ``d`` is kept only if the bound still passes with ``ext(P ∪
{d}) >= max(ext(P), ext({p, d}) for p in P)`` (monotone extents; a table of pair
extents), and the extent of each kept extension is then computed exactly, so the test
tightens at every row. Each column arises once, from its sorted prefix, and every column
that could have ``rc <= theta`` is found: the pricing stays exact, per anchor (the lowest
row) as the table's, so a complete round still gives a valid Lagrangian bound (Nemhauser
& Wolsey, 1988, §II.2; the set-partitioning model of Xiao & Tao, SIGMOD 2007, §4, as
stated in :mod:`republish.models.whole_release`). This is the anchor pricing of
:mod:`republish.models.whole_release_pricing` done for all anchors at once, vectorized,
starting from the table instead of from single rows.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from republish.models.whole_release_bound import Relaxation, reduced_costs
from republish.models.whole_release_counts import Family

if TYPE_CHECKING:
    from republish.models.whole_release_columns import Columns

__all__ = ["Extension", "MAX_PARTIALS"]

#: Candidate extensions kept at most per level of one pricing call; past it the other
#: partial columns are not extended (early rounds, with large prices, ask for millions).
MAX_PARTIALS = 3_000_000
#: Partial columns whose candidates are formed and tested at once.
CHUNK = 5_000


@dataclass(frozen=True)
class Extension:
    """The columns of ``family`` with more than ``k`` rows, priced from its tabled
    columns of exactly ``k`` rows (``base``: their rows, ``(B, k)`` ascending)."""

    family: Family
    k: int
    base: np.ndarray
    base_extent: np.ndarray  # the extent of each base column
    #: the pair extents of the rows, computed by the first pricing call and kept: the same
    #: every round (2,000 rows: a 2,000 x 2,000 matrix, about 0.3 s a round before)
    pairs: list[tuple[object, np.ndarray]] = field(default_factory=list, compare=False,
                                                   repr=False)

    def pair_extents(self, measure: object, n: int) -> np.ndarray:
        """``extent({i, j})`` for all rows ``i, j < n`` (zeros without a ``pairwise``
        measure), computed once per measure."""
        if not self.pairs or self.pairs[0][0] is not measure or len(self.pairs[0][1]) != n:
            pairwise = getattr(measure, "pairwise", None)
            self.pairs[:] = [(measure, np.asarray(
                pairwise(np.arange(n), np.arange(n)), dtype=np.float64)
                if pairwise is not None else np.zeros((n, n)))]
        return self.pairs[0][1]

    def price(self, columns: Columns, relaxed: Relaxation, theta: float,
              anchors: np.ndarray | None = None, deadline: float = math.inf,
              max_partials: int = MAX_PARTIALS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every column of more than ``k`` rows with reduced cost ``<= theta`` (canonical
        rows, ``(C, width)``), their reduced costs, and per row the least reduced cost of
        those anchored at it (``inf``: none, every such column has ``rc > theta``). Past
        ``max_partials`` candidates the remaining partial columns are not extended, and past
        ``deadline`` (``time.perf_counter()``) the search stops: some of the columns, and
        ``least`` is ``-inf`` (no bound)."""
        n = len(columns.problem.values)
        m, hi = columns.problem.m, self.family.hi
        pi = np.asarray(relaxed.pi, dtype=np.float64)
        least = np.full(n, math.inf)
        width = columns.width
        empty = np.zeros((0, width), dtype=np.int64)
        if hi <= self.k or not len(self.base):
            return empty, np.zeros(0), least
        pool_of = np.full(n + 1, -1, dtype=np.int64)
        for index, pool in enumerate(self.family.pools):
            pool_of[pool] = index
        rows = np.flatnonzero(pool_of[:n] >= 0)
        gain = np.maximum(pi[rows], 0.0)
        # after[j, r]: the r largest gains among the family's rows after row rows[j]
        # (rows[j] excluded), r = 0..hi-k; ranked_ids[j]: those rows by price, highest
        # first (-1 pads)
        later = len(rows)
        ranked_ids = np.full((later + 1, later), -1, dtype=np.int64)
        after = np.zeros((later + 1, hi - self.k + 1))
        for j in range(later):
            tail = np.arange(j + 1, later)
            order = tail[np.argsort(-pi[rows[tail]], kind="stable")]
            ranked_ids[j, :len(order)] = rows[order]
            top = np.cumsum(gain[order][:hi - self.k])
            after[j, 1:len(top) + 1] = top
            after[j, len(top) + 1:] = top[-1] if len(top) else 0.0
        # above[L, j]: how many of the L highest-priced rows come after rows[j], so that a
        # partial column ending at rows[j] has above[L(τ), j] candidates of price >= τ,
        # the first of ranked_ids[j] (a lookup where comparing every row took 13 of a
        # round's 18 s on 2,000 rows at m = 3)
        by_price = np.argsort(-pi[rows], kind="stable")
        lowest_first = -pi[rows][by_price]
        above = np.zeros((later + 1, later + 1), dtype=np.int32)
        np.cumsum(by_price[:, None] > np.arange(later + 1), axis=0, out=above[1:])
        position = np.full(n + 1, later, dtype=np.int64)  # -1 pads read `later`
        position[rows] = np.arange(later)
        sizes = np.arange(self.k + 1, hi + 1)
        sigma = np.maximum(m, sizes).astype(np.float64)
        tolerance = 1e-9 * max(1.0, abs(theta))

        partial, spread = self.base, self.base_extent
        if anchors is not None:
            wanted = np.zeros(n, bool)
            wanted[anchors] = True
            chosen = wanted[partial[:, 0]]
            partial, spread = partial[chosen], spread[chosen]
        measure = columns.measure
        # a row's extent with each other row: the extent with a next row is at least the
        # largest of these over the prefix (and the prefix's own)
        pair_extent = self.pair_extents(measure, n)
        paid = np.zeros(len(partial))
        for at in np.ascontiguousarray(partial.T):
            paid += pi[at]
        found, found_rc = [], []
        exact = True
        for size in range(self.k, hi):
            if not len(partial):
                break
            if time.perf_counter() > deadline:
                exact = False
                break
            last = position[partial[:, -1]]
            # can some size t > size still reach rc <= theta from here?
            alive = np.zeros(len(partial), bool)
            slack = np.full(len(partial), -np.inf)  # the most a next row's price must beat
            for t, s in zip(sizes, sigma, strict=True):
                if t <= size:
                    continue
                rest = after[last, t - size - 1]  # the other rows after the next one
                need = s * spread - paid - rest - theta - tolerance
                reach = need < after[last, t - size] - rest + 1e-12
                alive |= reach
                slack = np.where(reach, np.maximum(slack, -need), slack)
            partial, slack, last = partial[alive], slack[alive], last[alive]
            spread, paid = spread[alive], paid[alive]
            # the next row's price must reach `-slack` (the first `count` of its
            # ranked_ids); then the candidate's pairs with the prefix bound the extent.
            # A chunk of partial columns at a time, so only passing candidates are kept.
            kept_parent, kept_candidate = [], []
            total = 0
            for begin in range(0, len(partial), CHUNK):
                if time.perf_counter() > deadline or total > max_partials:
                    exact = False  # out of time, or too many: the rest is not extended
                    break
                part = np.arange(begin, min(begin + CHUNK, len(partial)))
                count = above[np.searchsorted(lowest_first, slack[part], side="right"),
                              last[part]]
                parent = np.repeat(part, count)
                offset = np.arange(len(parent)) - np.repeat(np.cumsum(count) - count, count)
                candidate = ranked_ids[last[parent], offset]
                fresh = (pool_of[partial[parent]] != pool_of[candidate][:, None]).all(axis=1)
                parent, candidate = parent[fresh], candidate[fresh]
                widest = spread[parent]
                for slot in range(size):
                    np.maximum(widest, pair_extent[partial[parent, slot], candidate],
                               out=widest)
                spent = paid[parent] + pi[candidate]
                ok = np.zeros(len(parent), bool)
                for t, s in zip(sizes, sigma, strict=True):
                    if t > size:
                        rest = after[position[candidate], t - size - 1]
                        ok |= s * widest - spent - rest <= theta + tolerance
                kept_parent.append(parent[ok])
                kept_candidate.append(candidate[ok])
                total += int(ok.sum())
            parent = np.concatenate(kept_parent) if kept_parent else np.zeros(0, np.int64)
            candidate = np.concatenate(kept_candidate) if kept_candidate else \
                np.zeros(0, np.int64)
            spent = paid[parent] + pi[candidate]
            grown = np.hstack([partial[parent], candidate[:, None]])
            if not len(grown) or time.perf_counter() > deadline:
                exact = exact and not len(grown)
                break
            spread = _extents(measure, grown)
            paid = spent
            # columns of size + 1 rows: the exact reduced cost where the bound allows it
            maybe = np.flatnonzero(max(m, size + 1) * spread - paid <= theta + tolerance)
            if len(maybe):
                block = np.full((len(maybe), width), -1, dtype=np.int64)
                block[:, :size + 1] = grown[maybe]
                cost, a_coef = columns.attributes(block)
                rc = reduced_costs(block, cost, a_coef, relaxed.y, relaxed.y_a)
                np.minimum.at(least, block[:, 0], rc)
                under = rc <= theta + tolerance
                if under.any():
                    found.append(block[under])
                    found_rc.append(rc[under])
            partial = grown
        block = np.vstack(found) if found else empty
        if not exact:
            least[:] = -math.inf
        return block, np.concatenate(found_rc) if found_rc else np.zeros(0), least


def _extents(measure: object, members: np.ndarray) -> np.ndarray:
    batch = getattr(measure, "batch", None)
    if batch is not None:
        return np.asarray(batch(members), dtype=np.float64)
    return np.array([float(measure(row[row >= 0])) for row in members],  # type: ignore[operator]
                    dtype=np.float64)
