"""Exact pricing of the whole-release model from a table of all of a family's columns.

Column generation in :mod:`republish.models.whole_release_columns` prices a missing
column by enumerating, per anchor row, the columns that could still have a negative
reduced cost (:mod:`republish.models.whole_release_pricing`). That is one Python loop
per anchor and partial column. A family whose columns all fit in memory (the first
release of 200 Adult rows at m = 2: 949,000 pairs and triples of distinct values) is
cheaper to enumerate once, vectorized, with each column's cost: a pricing round is then
``rc = cost - Σ_{i∈R} y_i - y_a·a_coef`` over the whole table, a few milliseconds, and
exact, so every round gives a valid Lagrangian bound (Nemhauser & Wolsey, *Integer and
Combinatorial Optimization*, 1988, §II.2; the set-partitioning model of Xiao & Tao,
SIGMOD 2007, §4 as stated in :mod:`republish.models.whole_release`).

Each column is anchored at its lowest row. Disjoint columns have distinct anchors, so a
solution's columns have reduced costs summing to at least ``Σ_a min(0, least_a)``, with
``least_a`` the least reduced cost of the columns anchored at ``a`` (the same bound
:func:`republish.models.whole_release_pricing.price_by_anchors` gives by its anchors).

An all-new family too large for the table keeps its smallest columns in it and prices
the larger ones by extension (:mod:`republish.models.whole_release_extension`; the first
release at m = 3: 931,000 triples tabled, groups of four and five rows extended). With a
table, :func:`fix_by_pool` proves an answer from the columns of least reduced cost.

Where the table holds every all-new column of ``m`` rows, a round bounds even before the
larger columns are priced. A column ``G`` of ``k > m`` new rows costs ``k·ext(G)``; its
``C(k, m)`` subsets of ``m`` rows, each weighted ``1/C(k-1, m-1)``, cover each of its rows
once and cost at most ``(k/m)·m·ext(G)``, with the same (a) coefficient in sum, so
``rc(G) >= Σ_S w·rc(S)`` (the relaxation by subsets of :mod:`republish.models.
whole_release_subset_bound`). With ``ρ_i`` the least ``rc(c)/|R_c|`` over the tabled
columns holding row ``i``, ``rc(c) >= Σ_{i∈c} ρ_i`` for every column, tabled or not, and
a solution covers each row at most once: ``D + Σ_i min(0, ρ_i)`` bounds every solution
(:meth:`TabledPricing.row_floor`; the ``D_g`` of :func:`~republish.models.
whole_release_columns.stage2`). The first release of 200 Adult rows at m = 3 had no
bound but the row bound (38.4, the answer 71.6) after 1 s, since its extension rounds did
not fit; the triples' rounds alone converge within it.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from republish.models.whole_release_bound import Relaxation
from republish.models.whole_release_counts import Family, count_columns
from republish.models.whole_release_extension import Extension
from republish.models.whole_release_pricing import RcOf, price_families, stack_columns
from republish.models.whole_release_restricted import cheapest_per_row
from republish.models.whole_release_table_columns import (
    TABLE_CHUNK,
    all_columns,
    all_columns_and_extents,
)

if TYPE_CHECKING:
    from republish.models.whole_release import WholeReleaseProblem
    from republish.models.whole_release_columns import Columns

__all__ = ["TABLE_CHUNK", "FamilyTable", "TabledPricing", "all_columns",
           "all_columns_and_extents", "built_in_time", "table_limit"]

#: Columns tabulated at most, over all families (about 40 bytes each with their costs):
#: the first release of 200 Adult rows has 949,000 at m = 2 and 931,000 triples at m = 3
#: (its four-row columns: about 35 million), so this serves m = 2 and 3 and small
#: releases.
TABLE_COLUMNS = 3_000_000
#: Cells (columns × row slots) tabulated at most: the rows take 4 bytes a cell row-major
#: and 2 more per slot (4 past 32,767 rows), so about 120 MB; m = 3's triples, 5 slots
#: wide, take 4.7M.
#: Later releases of 200 Adult rows at m = 6 hold 1.5-1.6 million columns of up to 11
#: rows (17.6M cells): at 15M they were left to enumeration, and five such releases were
#: proven at 10 s on 4 (in up to 6.3 s), at 3 s on 2; at 20M on 5 (in up to 3.3 s) and
#: 3-4 (two runs), with a peak of 560 MB instead of 480.
TABLE_CELLS = 20_000_000
#: Seconds a tabled column takes to build (enumerate, cost, index): the table is built only
#: where it can be by the deadline. 770,000 columns of a later release of 200 Adult rows at
#: m = 6 took 0.28 s, 1.56 million 0.58 s; at m = 7 a family of one table took 0.85 s
#: started at half a 1 s budget (after the relaxations per QI), ending 0.4 s past it.
TABLE_SECONDS_PER_COLUMN = 4e-7
#: The LP's start is taken from this many cheapest columns per row of the table.
START_POOL = 100
#: Column generation extends the tabled columns only once fewer than this many per row
#: have a negative reduced cost.
EXTEND_BELOW = 1.0
#: A pricing round returns each anchor's best columns and the best ones overall.
PER_ANCHOR, OVERALL = 5, 2_000


def built_in_time(columns: int, deadline: float) -> bool:
    """Whether a table of ``columns`` columns, built in one piece, ends by ``deadline``
    (TABLE_SECONDS_PER_COLUMN a column)."""
    return time.perf_counter() + TABLE_SECONDS_PER_COLUMN * columns < deadline


def table_limit(width: int) -> int:
    """The columns a table of ``width`` row slots may hold (TABLE_COLUMNS, TABLE_CELLS)."""
    return min(TABLE_COLUMNS, TABLE_CELLS // max(width, 1))


def _best_columns(rc: np.ndarray, anchor: np.ndarray) -> np.ndarray:
    """Indices of each anchor's PER_ANCHOR columns of least negative reduced cost and of
    the OVERALL least ones."""
    negative = np.flatnonzero(rc < -1e-9)
    order = negative[np.lexsort((rc[negative], anchor[negative]))]
    first = np.searchsorted(anchor[order], anchor[order], "left")
    per_anchor = order[np.arange(len(order)) - first < PER_ANCHOR]
    overall = negative[np.argsort(rc[negative], kind="stable")[:OVERALL]]
    return np.union1d(per_anchor, overall)


@dataclass(frozen=True)
class FamilyTable:
    """Every column of some families, sorted by anchor (lowest row): rows (canonical, as
    ``Columns.canonical``, ``int32``), cost ``|σ|·extent``, (a) coefficient, and where each
    anchor's columns start."""

    members: np.ndarray
    cost: np.ndarray
    a_coef: np.ndarray
    anchors: np.ndarray  # the distinct anchors, ascending
    starts: np.ndarray  # anchors[j]'s columns: starts[j]:starts[j + 1]
    slots: np.ndarray  # the members one slot per row (contiguous, for per-slot passes;
    # int16 where the rows fit)
    sizes: np.ndarray  # the rows of each column

    @classmethod
    def of(cls, members: np.ndarray, cost: np.ndarray, a_coef: np.ndarray) -> FamilyTable:
        anchor = members[:, 0]
        if len(anchor) and anchor.max() < 2**15:  # numpy's stable sort of int16 is a radix
            anchor = anchor.astype(np.int16)      # sort: 13 ms for 650,000, not 36
        order = np.argsort(anchor, kind="stable")  # a merge of sorted size blocks
        members, cost, a_coef = members[order], cost[order], a_coef[order]
        starts = np.flatnonzero(np.diff(members[:, 0], prepend=-2))
        # int16 where the rows fit: half the bytes every round reads (one copy, transposed)
        slots = members.T.astype(np.int16 if len(anchor) and anchor.dtype == np.int16 else
                                 members.dtype, order="C")
        sizes = np.zeros(len(cost), dtype=np.int16)
        for at in slots:  # a pass per slot: a quarter of a boolean sum over the axis
            sizes += at >= 0
        return cls(members, cost, a_coef, members[starts, 0].astype(np.int64),
                   np.append(starts, len(cost)), slots, sizes)

    @property
    def anchor(self) -> np.ndarray:
        """Each column's anchor."""
        return np.repeat(self.anchors, np.diff(self.starts))

    def reduced_costs(self, relaxed: Relaxation) -> np.ndarray:
        """``cost - Σ_{i∈R} y_i - y_a·a_coef``, one member slot at a time (``-1`` wraps to an
        appended 0): a (C, k) gather took most of a round. ``take`` into one buffer, from
        int16 slots: 16 ms a round on 770,000 columns of up to 10 rows, where indexing
        (int32 slots, converted to intp each time) took 26."""
        y = np.append(relaxed.y, 0.0)
        rc = self.cost - relaxed.y_a * self.a_coef
        held = np.empty_like(rc)
        for at in self.slots:
            y.take(at, out=held, mode="wrap")
            rc -= held
        return rc

    def least_per_anchor(self, rc: np.ndarray, rows: int) -> np.ndarray:
        least = np.full(rows, math.inf)
        if len(rc):
            least[self.anchors] = np.minimum.reduceat(rc, self.starts[:-1])
        return least


class TabledPricing:
    """Pricing for :func:`~republish.models.whole_release_columns.stage2`: families with
    few enough columns from one :class:`FamilyTable`, the others by anchors
    (:func:`~republish.models.whole_release_pricing.price_families`)."""

    def __init__(self, problem: WholeReleaseProblem, columns: Columns, fams: list[Family],
                 deadline: float, limit: int = TABLE_COLUMNS, extend: bool = True) -> None:
        """Tabulate the families of at most ``limit`` columns in all (smallest first),
        and with ``extend`` the all-new family's smallest columns when it is too large
        (its larger columns then priced by extension). Nothing past ``deadline``: no table
        where its columns would take longer (TABLE_SECONDS_PER_COLUMN)."""
        self.problem, self.rows = problem, len(columns.problem.values)
        sizes = [count_columns(f, columns.counts.is_new) for f in fams]
        tabled, used = [], 0
        for f in np.argsort(sizes, kind="stable").tolist():
            if used + sizes[f] <= limit:
                tabled.append(f)
                used += sizes[f]
        # all-new families too large: their smaller columns tabled, the rest extended
        parts = [(fams[f], fams[f].hi) for f in tabled]
        self.extensions: list[Extension] = []
        for f in np.argsort(sizes, kind="stable").tolist():
            family = fams[f]
            if f in tabled or family.need_old or not limit or not extend:
                continue
            k = max(family.lo, 1)
            if used + count_columns(dataclasses.replace(family, hi=k), columns.counts.is_new
                                    ) > limit:
                continue
            while k + 1 < family.hi and used + count_columns(dataclasses.replace(
                    family, hi=k + 1), columns.counts.is_new) <= limit:
                k += 1
            used += count_columns(dataclasses.replace(family, hi=k), columns.counts.is_new)
            parts.append((family, k))
            tabled.append(f)
        self.table: FamilyTable | None = None
        if tabled and built_in_time(used, deadline):
            # as wide as its largest column, not the model's: every pricing round and the
            # costing pass read each slot (m = 3: three of the model's five)
            width = max(k for _, k in parts)
            built = [all_columns_and_extents(dataclasses.replace(family, hi=k),
                                             columns.counts.is_new, width, columns.measure)
                     for family, k in parts]
            blocks = [block for block, _ in built]
            members = np.vstack(blocks)
            extents = None if any(e is None for _, e in built) else np.concatenate(
                [e for _, e in built if e is not None])
            cost, a_coef = columns.attributes(members, extents) if len(members) else (
                np.zeros(0), np.zeros(0, np.int64))
            at = 0
            for (family, k), block in zip(parts, blocks, strict=True):
                if k < family.hi:  # all new: |σ| = max(m, k)
                    is_base = (block >= 0).sum(axis=1) == k
                    base = block[is_base][:, :k].astype(np.int64)
                    base_extent = cost[at:at + len(block)][is_base] / max(
                        columns.problem.m, k)
                    self.extensions.append(Extension(family, k, base, base_extent))
                at += len(block)
            self.table = FamilyTable.of(members, cost, a_coef)
        done = set(tabled) if self.table is not None else set()
        self.rest = [fams[f] for f in range(len(fams)) if f not in done]
        self.columns = columns
        #: :meth:`row_floor` of the last pricing round's reduced costs (None: not valid)
        self.last_row_floor: float | None = None
        self._table_rc: tuple[Relaxation, np.ndarray] | None = None

    def table_reduced_costs(self, relaxed: Relaxation) -> np.ndarray:
        """The table's reduced costs under ``relaxed`` (read only), kept for the last
        duals: stage 2's last round, the ladder and the pool fixing price the same ones
        (about 10 ms each on the 917,000 triples of 200 Adult rows at m = 3)."""
        assert self.table is not None
        if self._table_rc is None or self._table_rc[0] is not relaxed:
            self._table_rc = (relaxed, self.table.reduced_costs(relaxed))
        return self._table_rc[1]

    @property
    def bounds_by_subsets(self) -> bool:
        """Whether the table bounds every column (module docstring): no family is priced
        by anchors, and every extended family has its columns of ``m`` rows tabled."""
        return self.table is not None and not self.rest and all(
            extension.k >= self.columns.problem.m for extension in self.extensions)

    def row_prices(self, rc: np.ndarray) -> np.ndarray:
        """Per row ``i``, ``min(0, ρ_i)``: ``ρ_i`` the least ``rc(c)/|R_c|`` of the tabled
        columns holding ``i`` (``rc``: the table's reduced costs). Where
        :attr:`bounds_by_subsets` holds, every column's reduced cost is at least the sum
        of its rows' (module docstring)."""
        assert self.table is not None
        # only columns of negative reduced cost lower a row's price below 0: once the LP
        # nears its optimum they are a few thousand of the table's hundreds of thousands
        negative = np.flatnonzero(rc < 0)
        per_row = rc[negative] / self.table.sizes[negative]
        least = np.zeros(self.rows + 1)  # the last entry takes the -1 pads
        for at in self.table.slots:
            np.minimum.at(least, at[negative], per_row)
        return least[:-1]

    def row_floor(self, rc: np.ndarray) -> float:
        """``Σ_i min(0, ρ_i)`` (:meth:`row_prices`): added to the LP's value, a bound on
        every solution where :attr:`bounds_by_subsets` holds."""
        return float(self.row_prices(rc).sum())

    @property
    def tabled(self) -> int:
        return 0 if self.table is None else len(self.table.cost)

    def price(self, relaxed: Relaxation, theta: float, limit: int, *,
              radius: float = math.inf, rc_of: RcOf | None = None,
              deadline: float = math.inf, anchors: np.ndarray | None = None,
              refine: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        """As :func:`price_families` on ``relaxed.pi``. The tabled columns' part is exact:
        with ``rc_of`` (column generation) each anchor's best columns of negative reduced
        cost and the best overall, without it (reduced-cost fixing) every column of reduced
        cost ``<= theta``; ``least`` holds, per anchor, the least reduced cost over the
        table."""
        least = np.full(self.rows, math.inf)
        found = []
        self.last_row_floor = None
        if self.rest:
            priced = price_families(self.problem, self.rest, relaxed.pi, theta, limit,
                                    radius, rc_of=rc_of, deadline=deadline, anchors=anchors,
                                    refine=refine)
            if priced is None:
                return None
            found.append(priced[0])
            least = priced[1]
        if self.table is not None and len(self.table.cost):
            table = self.table
            rc = self.table_reduced_costs(relaxed)
            if anchors is None and self.bounds_by_subsets:
                self.last_row_floor = self.row_floor(rc)
            tabled_least = table.least_per_anchor(rc, self.rows)
            if anchors is not None:  # as price_families: only these anchors are priced
                keep_anchor = np.zeros(self.rows, bool)
                keep_anchor[anchors] = True
                tabled_least[~keep_anchor] = math.inf
                rc = np.where(keep_anchor[table.slots[0]], rc, math.inf)
            least = np.minimum(least, tabled_least)
            if rc_of is None:
                picked = np.flatnonzero(rc <= theta + 1e-9 * max(1.0, abs(theta)))
                if len(picked) + sum(map(len, found)) > limit:
                    return None
            else:
                picked = _best_columns(rc, table.slots[0])
            found.append(table.members[picked])
            if rc_of is not None and self.extensions and \
                    (rc < -1e-9).sum() >= EXTEND_BELOW * self.rows:
                # partial pricing: the tabled columns alone improve the LP; the larger ones
                # wait until they are nearly priced out (early duals made the extension
                # search millions of candidates), and this round bounds nothing
                least[:] = -math.inf
                return stack_columns(found), least
        for extension in self.extensions:
            block, block_rc, extended_least = extension.price(
                self.columns, relaxed, theta if rc_of is None else 0.0, anchors, deadline)
            least = np.minimum(least, extended_least)  # -inf: too many candidates, no bound
            if rc_of is None:
                if np.isneginf(extended_least).any():  # not every column was found
                    return None
                if len(block) + sum(map(len, found)) > limit:
                    return None
                found.append(block)
            else:  # the reduced costs rc_of would give: the same duals
                found.append(block[_best_columns(block_rc, block[:, 0])])
        return stack_columns(found), least

    def start_columns(self, per_row: int) -> np.ndarray:
        """Each row's ``per_row`` cheapest columns among the cheapest ``START_POOL`` per row
        of the table: a start for the LP (the pricing brings the rest; the incumbent, also
        in the start, covers the rows this leaves without a column)."""
        if self.table is None:
            return np.zeros((0, 1), np.int64)
        cost = self.table.cost
        pool = np.arange(len(cost))
        if len(cost) > START_POOL * self.rows:  # sorting the whole table took 0.5 s
            pool = np.argpartition(cost, START_POOL * self.rows)[:START_POOL * self.rows]
        ids = cheapest_per_row(self.table.members[pool], cost[pool], pool, per_row)
        return self.table.members[ids]

    @property
    def covers_all(self) -> bool:
        """Whether every column is in the table."""
        return self.table is not None and not self.rest and not self.extensions

    @property
    def prices_all(self) -> bool:
        """Whether every column is priced from the table (in it, or by extension)."""
        return self.table is not None and not self.rest
