"""Stage (b) of the whole-release model (:mod:`republish.models.whole_release`): the
set-partitioning master over candidate groups, solved by LP-based price-and-fix with
column generation (Nemhauser & Wolsey, *Integer and Combinatorial Optimization*, 1988,
§II.2): the LP relaxation gives a dual bound and reduced costs, a restricted MIP an
incumbent, and SCIP the model over the columns whose reduced cost is within the
incumbent's gap -- every cheaper solution uses only those. This module prices the LP;
the incumbent searches and the fixing after it are in
:mod:`republish.models.whole_release_fixing`.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from republish.models.whole_release import WholeReleaseProblem

from republish.models.whole_release_bound import (
    Master,
    Relaxation,
    reduced_costs,
)
from republish.models.whole_release_counts import (
    Extent,
    Family,
    ReleaseCounts,
    count_columns,
)
from republish.models.whole_release_enumeration import enumerate_columns
from republish.models.whole_release_fixing import _Stage2, improve_and_prove
from republish.models.whole_release_master import IncrementalMaster
from republish.models.whole_release_restricted import (
    BUILD_SECONDS_PER_COLUMN,
    cheapest_per_row,
    solve_restricted,
)
from republish.models.whole_release_tables import TABLE_CHUNK, TabledPricing


def a_row_rhs(problem: WholeReleaseProblem, counts: ReleaseCounts, a_star: Fraction | float,
              weight: Fraction) -> int:
    """The (a) row's right-hand side for releases of (a) ``<= a_star``: ``q·A*``, less the
    constant ``p·N_new`` where rows may be deferred (:meth:`Columns.attributes`)."""
    return int(Fraction(a_star) * weight.denominator) - (
        weight.numerator * int(counts.is_new.sum()) if problem.allow_deferrals else 0)


def most_groups(problem: WholeReleaseProblem, counts: ReleaseCounts, weight: Fraction,
                rhs: int) -> int:
    """At most this many columns in any solution: each has ``|σ| >= m`` slots, so by the
    (a) row ``q·m·G <= q·Σ|σ| <= rhs + q·(rows covered) + p·(new rows covered)``."""
    p, q = weight.numerator, weight.denominator
    n, new = len(problem.values), int(counts.is_new.sum())
    credit = p * new if problem.allow_deferrals else 0
    return max(0, (rhs + q * n + credit) // (q * problem.m))


class Columns:
    """The columns present: rows (``-1`` pads, sorted), attributes, and a Master for them."""

    def __init__(self, problem: WholeReleaseProblem, counts: ReleaseCounts, measure: Extent,
                 weight: Fraction, rhs: int, width: int) -> None:
        self.problem, self.counts, self.measure, self.weight = problem, counts, measure, weight
        self.rhs, self.width = rhs, width
        self.members = np.zeros((0, width), dtype=np.int64)
        self.cost, self.a_coef = np.zeros(0), np.zeros(0, dtype=np.int64)
        self.index: dict[bytes, int] = {}

    def canonical(self, block: np.ndarray) -> np.ndarray:
        n = len(self.problem.values)
        block = np.hstack([block, np.full((len(block), self.width - block.shape[1]), -1)])
        ordered = np.sort(np.where(block < 0, n, block), axis=1)
        return np.where(ordered == n, -1, ordered).astype(np.int64)

    def attributes(self, block: np.ndarray, extents: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Cost ``|σ|·extent`` and (a) coefficient ``q·cf - p·new`` of canonical columns
        (``q·cf`` without deferrals: the (a) row then leaves out the constant ``-p·N_new``,
        else it is implied by the cover rows and its dual is arbitrary, which inflates
        every new row's price and with it the pricing). ``extents``: each column's extent,
        where already known."""
        if len(block) > TABLE_CHUNK:  # a table's million columns: in chunks (TABLE_CHUNK)
            parts = [self.attributes(block[at:at + TABLE_CHUNK], None if extents is None
                                     else extents[at:at + TABLE_CHUNK])
                     for at in range(0, len(block), TABLE_CHUNK)]
            return np.concatenate([c for c, _ in parts]), np.concatenate([a for _, a in parts])
        problem, counts, p, q = self.problem, self.counts, self.weight.numerator, \
            self.weight.denominator
        # one member slot at a time (-1 reads an appended sentinel): tables of a million
        # columns (models/whole_release_tables.py) made (C, k) reductions a bottleneck
        # (``take`` wraps -1 to the sentinel, without converting the slot to 64-bit indices)
        bucket = np.append(problem.bucket, -1).astype(np.int64)
        is_new = np.append(counts.is_new, False).astype(np.int64)
        size, kind, new = (np.zeros(len(block), np.int64), np.full(len(block), -1, np.int64),
                           np.zeros(len(block), np.int64))
        held = np.empty(len(block), np.int64)
        for at in np.ascontiguousarray(block.T):
            size += at >= 0
            np.maximum(kind, bucket.take(at, out=held, mode="wrap"), out=kind)
            new += is_new.take(at, out=held, mode="wrap")
        sigma = np.where(kind >= 0, np.append(counts.signature_size, 0)[kind],
                         np.maximum(problem.m, size))
        batch = getattr(self.measure, "batch", None)
        spread = extents if extents is not None else np.asarray(
            batch(block), dtype=np.float64) if batch is not None else np.array(
            [self.measure(row[row >= 0]) for row in block], dtype=np.float64)
        if not problem.allow_deferrals:  # every new row is covered: -p·new is a constant
            return sigma * spread, q * (sigma - size)
        return sigma * spread, q * (sigma - size) - p * new

    def add(self, block: np.ndarray) -> np.ndarray:
        """Add columns (duplicates merged); their indices."""
        block = self.canonical(block)
        where, fresh = np.empty(len(block), dtype=np.int64), []
        for c, row in enumerate(block):
            key = row.tobytes()
            if key not in self.index:
                self.index[key] = len(self.index)
                fresh.append(c)
            where[c] = self.index[key]
        if fresh:
            cost, a_coef = self.attributes(block[fresh])
            self.members = np.vstack([self.members, block[fresh]])
            self.cost, self.a_coef = np.append(self.cost, cost), np.append(self.a_coef, a_coef)
        return where

    def missing(self, block: np.ndarray) -> np.ndarray:
        block = self.canonical(block)
        return np.array([row.tobytes() not in self.index for row in block], dtype=bool)

    def most_groups(self) -> int:
        """At most this many columns in any solution (:func:`most_groups`)."""
        return most_groups(self.problem, self.counts, self.weight, self.rhs)

    def master(self, radius: np.ndarray) -> Master:
        exact = ~(self.counts.is_new & self.problem.allow_deferrals)
        row_a = np.where(self.counts.is_new & self.problem.allow_deferrals,
                         -self.weight.numerator, 0)
        return Master(self.members, self.cost, self.a_coef, self.rhs, exact, row_a, radius)


#: Column generation's pricing stops at PRICING_SHARE of stage 2's budget, so the incumbent
#: searches and the reduced-cost fixing keep theirs, and a round that starts with less than
#: LAST_ROUND_SHARE of it left is the last.
PRICING_SHARE, LAST_ROUND_SHARE = 0.5, 0.6
#: The same shares for a release with old rows whose columns are all in the table: every
#: round is exact and bounds, so the LP's convergence is what proves it (the LP's optimum
#: was integral, or the fixing left SCIP a few hundred columns, in every later release of
#: 200 Adult rows at m = 2-6 we measured). Later releases at m = 6 (five, tables of
#: 540,000-770,000 columns, 0.1 s a round) with 1.5 / 2 s: 3 / 4 of 5 proven, against 2 /
#: 3 with the shares above (both with LATER_START_PER_ROW; 0 / 3 with neither).
TABLED_PRICING_SHARE, TABLED_LAST_ROUND_SHARE = 0.85, 0.15
#: Above this many columns, all enumerated, the LP starts from POOL_PER_ROW cheapest
#: columns per row (and the start) and takes the others as their reduced costs turn
#: negative: building an LP of 40,000 columns takes 0.4 s of a 1 s release (m = 4).
POOL_COLUMNS, POOL_PER_ROW = 8_000, 10
#: Exact rounds in a row that leave the LP bound and the Lagrangian bound unchanged before
#: column generation stops (degenerate masters often need a few such rounds before the
#: bound moves again; :func:`stalled_rounds`).
STALLED_ROUNDS = 3


def stage2(columns: Columns, fams: list[Family], radius: np.ndarray, start: list[int],
            box: bool, time_limit: float, seed: int, limit: int,
            pricing: WholeReleaseProblem | None = None,
            pricer: TabledPricing | None = None) -> _Stage2:
    """Price-and-fix (module docstring), with column generation when columns are missing.

    After a complete pricing round with duals ``y``, give row ``i`` the least ``ρ_i <= 0`` of
    ``rc_c / |R_c|`` over the missing columns ``c ∋ i``: as a solution covers each row at most
    once, its missing columns add ``>= Σ_i ρ_i`` to ``yᵀb``, so ``D_g = D + Σ_i ρ_i`` bounds
    every solution, and one using a column of reduced cost ``rc >= 0`` costs ``>= D_g + rc``:
    the fixing enumerates the columns with ``rc <= UB - D_g``. ``pricer``: the tables of
    the families whose columns were all tabulated (:mod:`republish.models.whole_release_
    tables`), the others priced by anchors."""
    started = time.perf_counter()
    # its convergence proves (TABLED_PRICING_SHARE)
    converges = pricer is not None and pricer.covers_all and columns.problem.has_old_rows
    pricing_share, last_share = (TABLED_PRICING_SHARE, TABLED_LAST_ROUND_SHARE) if \
        converges else (PRICING_SHARE, LAST_ROUND_SHARE)
    price_end = started + pricing_share * time_limit  # the rest finds and proves incumbents

    def left() -> float:
        return time_limit - (time.perf_counter() - started)

    # priced on `pricing`'s points (a box extent at most the columns' extent)
    problem, n = pricing or columns.problem, len(columns.problem.values)
    complete = bool(np.isposinf(radius).all())
    best, best_cost = list(start), float(columns.cost[start].sum())
    bound, relaxed, rounds, previous, stalled = -math.inf, None, 0, math.inf, 0
    reach = float(radius[np.isfinite(radius)].max(initial=0.0))  # partial pricing's radius
    scale = float(np.ptp(problem.points, axis=0).sum()) if n else 0.0  # no box is larger
    fixing: tuple[Any, float] | None = None  # (relaxation whose duals fix, D_g)
    lp: IncrementalMaster | None = None  # re-solved from its last basis as columns arrive
    # Every column enumerated but too many to build at once: the LP starts from each row's
    # cheapest columns and the start, and prices the rest by their reduced costs
    pooled = complete and len(columns.cost) > POOL_COLUMNS
    entering: np.ndarray | None = None  # pooled: the columns the next solve adds
    if pricer is None or complete:  # every family priced by anchors
        pricer = TabledPricing(problem, columns, fams, deadline=price_end, limit=0)
    while left() > 0:
        if lp is None:
            active = np.union1d(cheapest_per_row(
                columns.members, columns.cost, np.arange(len(columns.cost)), POOL_PER_ROW),
                start).astype(np.int64) if pooled else None
            if left() < BUILD_SECONDS_PER_COLUMN * (
                    len(columns.cost) if active is None else len(active)):
                break
            lp = IncrementalMaster(columns.master(radius), active)
            entering = np.zeros(0, np.int64) if pooled else None
        relaxed = lp.relax(columns.master(radius), left() / 2, add=entering)
        if relaxed is None:
            break
        if complete:  # the bound holds for every column, present in the LP or not
            if fixing is None or relaxed.bound > fixing[1]:
                fixing = (relaxed, relaxed.bound)
            bound = max(bound, relaxed.bound)
            negative = np.flatnonzero((relaxed.rc < -1e-9) & ~lp.loaded) if pooled else \
                np.zeros(0, np.int64)
            if not len(negative):
                break
            entering = negative[np.argsort(relaxed.rc[negative], kind="stable")][:max(2 * n,
                                                                                     500)]
            rounds += 1
            continue
        bound = max(bound, relaxed.bound_radius if box else -math.inf)
        if not box:
            break
        # column generation: 40% of the time, ended by an exact round for the bound.
        # Every round prices exactly: since pricing prunes by the hierarchy extents
        # (session 8) an exact round on the first release of 200 Adult rows (m = 3) added
        # 400-5,500 improving columns in 0.4-0.6 s, where a heuristic round (a few columns
        # per anchor) added 12-55 in 0.13 s; with up to 5 heuristic rounds between exact
        # ones the 10 s bound stayed at the row bound (38.4), without them it reached 60.6.
        last_round = left() < last_share * time_limit

        def rc_of(block: np.ndarray, relaxed: Relaxation = relaxed) -> np.ndarray:
            block = columns.canonical(block)
            return reduced_costs(block, *columns.attributes(block), relaxed.y, relaxed.y_a)

        result = pricer.price(relaxed, 0.0, limit, rc_of=rc_of, deadline=price_end)
        floor = pricer.last_row_floor  # bounds even where the larger columns wait
        exact = result is not None
        while result is None or not exact:  # too many to price: a larger radius, no bound
            if result is not None:
                fresh = result[0][columns.missing(result[0])]
                if (rc_of(fresh) < 0).any():
                    break
            if reach >= scale:
                result = None
                break
            reach = max(reach * 1.5, 1e-3 * scale)
            result = pricer.price(relaxed, 0.0, limit, radius=reach, deadline=price_end)
            exact = False
            if result is None:
                break
        if result is None or (last_round and not exact):
            break
        priced = columns.canonical(result[0][columns.missing(result[0])])
        rc = rc_of(priced)
        rounds += 1
        if not exact:
            order = np.argsort(rc, kind="stable")[:max(2 * n, 2000)]
            columns.add(priced[order[rc[order] < 0]])
            continue
        # disjoint columns have distinct anchors: a solution's reduced costs sum to at
        # least the anchors' least ones (price_by_anchors)
        per_anchor = np.minimum(result[1], 0.0)
        unsure = np.flatnonzero(per_anchor < -1e-9)
        # the table's row prices already bound every column within the tolerance: the LP
        # is optimal over all columns, and refining the anchors only takes time (0.05-0.11
        # s of a 1 s first release of 200 Adult rows at m = 3)
        settled = floor is not None and -floor <= 1e-6 * max(1.0, abs(relaxed.bound))
        if len(unsure) and not (rc < -1e-9).any() and not settled:
            # converged: the anchors left with a floor are searched up to their least
            # reduced cost (_best_of_anchor's refine), which may still find improving
            # columns (before convergence the bound is loose anyway, and this costs time)
            sharper = pricer.price(relaxed, 0.0, limit, rc_of=rc_of, deadline=price_end,
                                   anchors=unsure, refine=True)
            if sharper is not None:
                per_anchor[unsure] = np.maximum(per_anchor[unsure],
                                                np.minimum(sharper[1][unsure], 0.0))
                more = columns.canonical(sharper[0][columns.missing(sharper[0])])
                priced, rc = np.vstack([priced, more]), np.concatenate([rc, rc_of(more)])
        # -inf: the round could not price every column
        least = least_of_solution(per_anchor, columns.most_groups())
        rising = bound  # the Lagrangian bound before this round
        if math.isfinite(least) and (fixing is None or relaxed.bound + least > fixing[1]):
            fixing = (relaxed, relaxed.bound + least)
        bound = max(bound, relaxed.bound + least)
        if floor is not None and (fixing is None or relaxed.bound + floor > fixing[1]):
            fixing = (relaxed, relaxed.bound + floor)
            bound = max(bound, relaxed.bound + floor)
        stalled = stalled_rounds(stalled, previous, relaxed.bound, rising, bound)
        converged = settled or (math.isfinite(least) and -least <= 1e-6 * max(1.0, abs(bound)))
        if last_round or converged or stalled >= STALLED_ROUNDS:
            break  # out of time, converged, or stalled on degenerate columns
        previous = relaxed.bound
        order = np.argsort(rc, kind="stable")[:max(2 * n, 2000)]
        columns.add(priced[order[rc[order] < 0]])
    note = (f"LP priced from the enumerated columns: {rounds} rounds" if pooled else "LP") \
        if complete else f"column generation: {rounds} rounds"
    if relaxed is None:
        master = columns.master(radius)
        status, picked, value, found = solve_restricted(
            master, np.arange(len(columns.cost)), best, left(), seed)
        if picked is not None and value < best_cost:
            best, best_cost = picked, float(columns.cost[picked].sum())
        if complete and status == "OPTIMAL":
            return _Stage2("OPTIMAL", best, best_cost, best_cost, "SCIP on all columns")
        return _Stage2("FEASIBLE", best, best_cost, bound, note + "; SCIP, no relaxation")
    return improve_and_prove(columns, radius, relaxed, fixing, pricer, best, best_cost, bound,
                             note, complete=complete, limit=limit, seed=seed, started=started,
                             time_limit=time_limit)


def least_of_solution(per_anchor: np.ndarray, groups: float) -> float:
    """A lower bound on the reduced costs of a solution's columns, from each anchor's least
    (``per_anchor``, ``<= 0``): a solution holds at most ``groups`` columns
    (:meth:`Columns.most_groups`), of distinct anchors, so at most the ``groups`` most
    negative count (against every anchor's: a later release of 200 Adult rows at m = 7
    has 200 anchors and at most 34 groups). A fractional ``groups`` bounds fractional
    solutions too (each anchor's columns then weigh at most 1 together, and ``groups`` in
    all): the ``⌊groups⌋`` most negative and the fraction of the next."""
    if groups < 0:
        raise ValueError(f"groups must be >= 0, got {groups}")
    whole = int(math.floor(groups))
    if whole >= len(per_anchor):
        return float(per_anchor.sum())
    ordered = np.partition(per_anchor, whole)  # the `whole` least first, then the next
    fraction = groups - whole  # (0·-inf would be nan: -inf marks an anchor not priced)
    return float(ordered[:whole].sum() + (fraction * ordered[whole] if fraction else 0.0))


def stalled_rounds(stalled: int, previous: float, value: float, bound_before: float,
                   bound: float) -> int:
    """Exact rounds in a row that left both the LP's value (``previous`` -> ``value``) and
    the Lagrangian bound (``bound_before`` -> ``bound``) where they were. A degenerate LP
    keeps its value for rounds while its duals, and the bound, still rise: a later release
    of 500 Adult rows at m = 3 held 594.85 for four rounds and converged at 587.60 after
    twelve (2.5 s), where stopping at the third left the bound at 140.8 (gap 13 % from the
    pair bound instead of 0.7 %)."""
    rose = math.isfinite(bound) and bound > bound_before + 1e-7 * max(1.0, abs(bound))
    still = previous - value <= 1e-7 * max(1.0, abs(value))
    return stalled + 1 if still and not rose else 0


def initial_columns(problem: WholeReleaseProblem, fams: list[Family], is_new: np.ndarray,
                     limit: int, deadline: float = math.inf, partial_limit: int | None = None
                     ) -> tuple[list[np.ndarray], np.ndarray, str]:
    """The columns to start from, and per row a radius ``r_i``: every column holding row
    ``i`` of box extent ``<= r_i`` is among them (``inf``: every column). All columns when
    they number at most ``limit``; else the smallest families whole (up to half of
    ``partial_limit``, default ``limit``)
    and the others' columns of extent ``<= r``, ``r`` (about) as large as the limit and the
    ``deadline`` (``time.perf_counter()``) allow; a family cut off by the deadline is left
    out (its rows get radius ``-inf``: nothing is claimed of them)."""
    sizes = [count_columns(f, is_new) for f in fams]
    radius_of_row = np.full(len(problem.values), math.inf)
    whole, used = [], 0
    if sum(sizes) > limit and partial_limit is not None:
        limit = min(limit, partial_limit)
    for f in np.argsort(sizes, kind="stable").tolist():
        if used + sizes[f] <= (limit if sum(sizes) <= limit else limit // 2):
            whole.append(f)
            used += sizes[f]
    found = [enumerate_columns(problem, fams[f], limit=limit, deadline=deadline)
             for f in whole]
    for f, columns in zip(whole, found, strict=True):
        if columns is None:  # out of time: claim nothing of its rows
            radius_of_row[np.concatenate(fams[f].pools)] = -math.inf
    rest = [fams[f] for f in range(len(fams)) if f not in whole]
    if not rest:
        return [c for c in found if c is not None], radius_of_row, "all columns"

    def within(radius: float) -> list[np.ndarray] | None:
        out: list[np.ndarray] = []
        for family in rest:
            columns = enumerate_columns(problem, family, limit=limit - used - sum(map(len, out)),
                                        radius=radius, deadline=deadline)
            if columns is None:
                return None
            out.append(columns)
        return out

    scale = float(np.ptp(problem.points, axis=0).sum()) if len(problem.points) else 0.0
    radius, local = max(scale, 1e-9) / 64, None
    for _ in range(6):  # shrink until the columns fit
        if time.perf_counter() > deadline:
            break
        local = within(radius)
        if local is not None:
            break
        radius /= 2
    grow = 2.0
    while local is not None and grow > 1.1 and radius < scale and \
            time.perf_counter() < deadline:  # x2, then x1.5, x1.25
        more = within(radius * grow)
        if more is None:
            grow = 1 + (grow - 1) / 2
        else:
            radius, local = radius * grow, more
    if local is None:
        radius, local = -math.inf, []
    for family in rest:
        radius_of_row[np.concatenate(family.pools)] = radius
    return [c for c in found if c is not None] + local, radius_of_row, (
        f"{len(whole)} of {len(fams)} column families whole, the others' columns of extent "
        f"<= {radius:.4g}")


