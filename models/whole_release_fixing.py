"""Stage 2 of the whole-release model after its LP
(:func:`republish.models.whole_release_columns.stage2`): the incumbent searches, and the
proof of the best release found by reduced-cost fixing (Nemhauser & Wolsey, *Integer and
Combinatorial Optimization*, 1988, §II.2).

The incumbent is sought by rounding an integral LP solution, by a dive (the columns with
``x* > 0.9`` fixed) and by a restricted MIP over the columns of least reduced cost -- the
whole table's where the table prices every column
(:func:`~republish.models.whole_release_restricted.fix_by_pool`). Then every release cheaper
than the incumbent ``UB`` uses only columns of reduced cost ``<= UB - D_g`` (``D_g`` the
bound whose duals fix), and SCIP over them proves the release. A large pool is first
shrunk by the LP over it with subset-row cuts (Jepsen, Petersen, Spoorendonk & Pisinger,
Operations Research 56(2), 2008; :mod:`republish.models.whole_release_subset_rows`); where
the fixing cannot prove the release, the time left goes to SCIP over a wider pool of least
reduced cost, which finds cheaper releases and may still prove one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from republish.models.whole_release_columns import Columns

from republish.models.whole_release_bound import Relaxation, reduced_costs
from republish.models.whole_release_restricted import (
    FIXING_COLUMNS_PER_SECOND,
    cheapest_per_row,
    fix_by_pool,
    is_feasible,
    solve_restricted,
)
from republish.models.whole_release_subset_rows import tighten_pool
from republish.models.whole_release_tables import TabledPricing

#: Reduced-cost fixing may enumerate up to this many columns (or max_columns if larger),
#: and CUT_POOL_PER_SECOND per second left, for subset-row cuts to shrink them
#: (:mod:`republish.models.whole_release_subset_rows`); the cuts take at most CUT_SHARE of
#: the time left, and at least CUT_SECONDS of it. 200 Adult rows at m = 3: 377,000 columns
#: enumerated in about 1.5 s, cut to 73,000 in 0.9 s.
CUT_POOL_COLUMNS, CUT_POOL_PER_SECOND, CUT_SHARE, CUT_SECONDS = 2_000_000, 150_000, 0.3, 1.5
#: Pools of at most this many columns (and at most max_columns) go to SCIP as they are.
CUT_POOL_ABOVE = 5_000
#: A pool of at most SMALL_POOL columns goes to SCIP with SMALL_POOL_SECONDS left, past
#: FIXING_COLUMNS_PER_SECOND: that rate was measured on pools of 37,000-164,000 columns,
#: while the first releases of 200 Adult rows at m = 2 left 3,800-5,500 columns that SCIP
#: proved in 0.15-0.2 s, refused with 0.25 s left.
SMALL_POOL, SMALL_POOL_SECONDS = 6_000, 0.1
#: Where reduced-cost fixing cannot prove the release, SCIP gets WIDER_POOL_SHARE of the
#: time left (from WIDER_POOL_SECONDS) over WIDER_POOL times the restricted search's pool
#: of columns of least reduced cost: the first release of 2,000 Adult rows at m = 2 (60 s)
#: stopped at 38 s with "fixing too large" and 110.10; twice the pool (about 80,000
#: columns with the extended ones) then gave 108.67-110.04 over four runs, four times the
#: pool 110.04 once.
WIDER_POOL, WIDER_POOL_SHARE, WIDER_POOL_SECONDS = 2, 0.95, 1.0
#: No incumbent search or reduced-cost fixing starts with less than this left: building
#: their SCIP model or pricing the extended columns took 0.03-0.11 s past the end of 1 s
#: first releases at m = 3, which found nothing in that time.
LAST_STEP_SECONDS = 0.05
#: Share of the time left that the restricted MIP over the table's columns of least reduced
#: cost may take (its SCIP run finds the incumbent and sometimes proves it).
RESTRICTED_SHARE = 0.9
#: The ladder of restricted MIPs (:func:`restricted_ladder`): pools of each row's
#: LADDER_PER_ROW columns of least reduced cost of each size, from the LP's columns and the
#: table's LADDER_TABLE_PER_ROW x rows of least reduced cost; a pool is solved when SCIP
#: has LADDER_SECONDS_PER_COLUMN a column (200 Adult rows, m = 3: 465-1,160 columns proven
#: in 0.05-0.2 s, 1,900 in 1.5 s), and the ladder stops within LADDER_GAP of the bound.
#: It takes the time left (LADDER_SHARE), at most LADDER_SECONDS or LADDER_BUDGET_SHARE
#: of stage 2's budget, whichever is larger. At 1-5 s the fixing after it proves nothing
#: at m = 3 anyway (a share of 0.5 left the ladder no time at 1 s: median gap 12.8 %
#: against 2.6-5.5 %); at 10 s an uncapped ladder cost proofs (4 of ten proven against 6,
#: capped at 1 s 6); at 60 s on 2,000 rows (m = 2) the 1 s cap left 109.9, a tenth of the
#: budget 106.3.
LADDER_PER_ROW = (1, 2, 4, 8, 16, 32)
LADDER_SECONDS_PER_COLUMN = 1.5e-4
LADDER_TABLE_PER_ROW = 40
LADDER_SHARE, LADDER_SECONDS, LADDER_BUDGET_SHARE = 1.0, 1.0, 0.1
LADDER_GAP = 0.02
#: The ladder's stopping gap for a release with old rows, whose LP is usually integral or
#: its value the optimum's: the ladder goes on until it meets the bound. A later release of
#: 200 Adult rows at m = 6 (LP converged at 0.61 s): stopped within 2 % at 316.47, then
#: SCIP on 32,912 fixed columns proved 311.70 at 4.7 s; the ladder's next pools found it
#: at 0.92 s and the LP's bound proved it.
LATER_LADDER_GAP = 0.0
#: SCIP's time per column of a ladder pool where the release has old rows: later releases
#: of 200 Adult rows at m = 3-6 solved pools of 501-3,982 columns in 0.03-0.21 s (3-9e-5 s
#: a column), where first releases at m = 3 need about LADDER_SECONDS_PER_COLUMN.
LATER_LADDER_SECONDS_PER_COLUMN = 1e-4


def restricted_ladder(columns: Columns, pricer: TabledPricing | None, relaxed: Relaxation,
                      best: list[int], best_cost: float, bound: float, *, deadline: float,
                      seed: int, gap: float = LADDER_GAP,
                      seconds_per_column: float = LADDER_SECONDS_PER_COLUMN
                      ) -> tuple[list[int], float, int]:
    """Incumbents from SCIP over pools of growing size: for ``k`` in LADDER_PER_ROW, each
    row's ``k`` columns of least reduced cost under ``relaxed`` of each size (rows per
    column), the LP's support and the incumbent ``best`` (cost ``best_cost``), among the
    LP's columns and the table's of least reduced cost. Stops once ``best`` is within
    ``gap`` (relative) of ``bound``, a pool's SCIP run is cut short, or the next pool would
    not fit before ``deadline`` at ``seconds_per_column`` (``pricer`` None: no table, the
    columns present only). Returns the best release found, its cost, and the pools solved.

    A restricted master heuristic (Joncour, Michel, Sadykov, Sverdlov & Vanderbeck,
    *Column generation based primal heuristics*, ENDM 36, 2010, §2). The pool of least
    reduced cost overall, which the fixing uses, holds many columns of the rows whose
    columns are cheap and few or none of the others', and hardly any of the larger groups
    that a partition of ``n`` rows into groups of ``m`` needs when ``m`` does not divide
    ``n``: on the first release of 200 Adult rows at m = 3 (1 s, sample 6), SCIP found
    nothing better than the start (88.3) in 6,000-7,400 such columns within 0.5-2 s, nor in
    each row's 6 cheapest of any size (687 columns, 77.1 after 1.8 s), while each row's
    cheapest of each size gave 71.0 in 0.05 s (465 columns), 8 of each 67.4 in 0.2 s and
    16 of each 67.2 in 1.5 s (the best known; a 30 s run before the ladder ended at 67.4)."""
    n = len(columns.problem.values)
    if pricer is not None and pricer.table is not None:  # the table's cheapest, beside
        # the LP's own columns
        table_rc = pricer.table_reduced_costs(relaxed)
        take = min(len(table_rc), LADDER_TABLE_PER_ROW * n)
        cheap = np.argpartition(table_rc, take - 1)[:take] if take < len(table_rc) \
            else np.arange(len(table_rc))
        columns.add(pricer.table.members[cheap].astype(np.int64))
    master = columns.master(np.full(n, -np.inf))
    rc = reduced_costs(master.members, master.cost, master.a_coef, relaxed.y, relaxed.y_a)
    ids, size = np.arange(len(rc)), (master.members >= 0).sum(axis=1)
    by_size = [size == k for k in np.unique(size).tolist()]
    support = np.flatnonzero(relaxed.x > 1e-9)
    solved, previous = 0, 0
    enough = bound + max(gap * abs(bound), 1e-9 * max(1.0, abs(bound)))
    for k in LADDER_PER_ROW:
        pool = np.union1d(np.union1d(np.concatenate(
            [cheapest_per_row(master.members[of], rc[of], ids[of], k) for of in by_size]),
            support), best).astype(np.int64)
        left = deadline - time.perf_counter()
        if len(pool) <= previous or seconds_per_column * len(pool) > left or \
                best_cost <= enough:
            break
        status, picked, value, _ = solve_restricted(master, pool, best, left, seed)
        solved, previous = solved + 1, len(pool)
        if picked is not None and value < best_cost:
            best, best_cost = picked, float(columns.cost[picked].sum())
        if status != "OPTIMAL":
            break
    return best, best_cost, solved


@dataclass
class _Stage2:
    """Stage 2's answer: its status, the chosen columns, their cost, the bound, and a note
    of how they were found."""

    status: str
    chosen: list[int]
    cost: float
    bound: float
    note: str


def improve_and_prove(columns: Columns, radius: np.ndarray, relaxed: Relaxation,
                      fixing: tuple[Relaxation, float] | None, pricer: TabledPricing,
                      best: list[int], best_cost: float, bound: float, note: str, *,
                      complete: bool, limit: int, seed: int, started: float,
                      time_limit: float) -> _Stage2:
    """After stage 2's LP ``relaxed`` (bound ``bound``), the incumbent searches from
    ``best`` (cost ``best_cost``), then reduced-cost fixing under ``fixing`` (the
    relaxation whose duals fix, and its bound ``D_g``; ``None``: no fixing) -- module
    docstring. ``complete``: every column is among ``columns`` (else the fixing prices
    the missing ones by ``pricer``, up to ``limit``). Stage 2 started at ``started``
    (``time.perf_counter()``) with ``time_limit`` seconds; ``note`` says how its LP went."""
    end = started + time_limit
    n = len(columns.problem.values)

    def left() -> float:
        return time_limit - (time.perf_counter() - started)

    master = columns.master(radius)
    rc = reduced_costs(master.members, master.cost, master.a_coef, relaxed.y, relaxed.y_a)
    xs = np.zeros(len(rc))
    xs[:len(relaxed.x)] = relaxed.x
    tolerance = 1e-9 * max(1.0, abs(bound))
    restricted_size = max(5 * n, min(30 * n, 20_000))  # columns of the restricted search
    with_old_rows = columns.problem.has_old_rows
    ladder_gap, ladder_pace = (LATER_LADDER_GAP, LATER_LADDER_SECONDS_PER_COLUMN) if \
        with_old_rows else (LADDER_GAP, LADDER_SECONDS_PER_COLUMN)
    laddered = False
    for attempt in ("rounding", "dive", "ladder", "restricted"):
        if best_cost <= bound + tolerance or left() <= LAST_STEP_SECONDS:
            break
        if attempt == "rounding":  # an integral LP solution
            keep = np.flatnonzero(xs > 0.5)
            if not (np.all(np.minimum(xs, 1 - xs) < 1e-6) and is_feasible(master, keep)):
                continue
            picked, value = keep.tolist(), float(columns.cost[keep].sum())
        elif attempt == "ladder":  # pools of each row's cheapest columns
            # where the table holds every column of a first release (m = 2), the pool
            # fixing below finds and proves the optimum itself (9 of 10 samples at 1 s,
            # 6-7 with the ladder first); with old rows, its 6,000 columns took SCIP 3.5 s
            # where the ladder found the optimum in 0.04 s (benchmarks/RESULTS.md, session
            # 18)
            if not (pricer.prices_all and (pricer.extensions or with_old_rows)):
                continue
            picked, value, solved = restricted_ladder(
                columns, pricer, relaxed, best, best_cost, bound,
                deadline=time.perf_counter() + min(LADDER_SHARE * left(), max(
                    LADDER_SECONDS, LADDER_BUDGET_SHARE * time_limit)),
                seed=seed, gap=ladder_gap, seconds_per_column=ladder_pace)
            # it added table columns: the later searches see them, priced by `relaxed`
            master = columns.master(radius)
            rc = reduced_costs(master.members, master.cost, master.a_coef, relaxed.y,
                               relaxed.y_a)
            xs = np.pad(xs, (0, len(rc) - len(xs)))
            if not solved:
                continue
            # the reduced-cost fixing from its release follows, without the pool fixing's
            # SCIP run over the restricted size (6,000 columns at 200 rows), which took
            # the time: 45 later releases of 200 rows proven at 0.3 s without it (38 with
            # it, 39 without the ladder); first releases at m = 3, 10 s: 7 of 10 proven in
            # two runs, against 5 with it
            laddered = True
        else:  # fix x* > 0.9 (dive) or nothing; the rest from the columns of least rc
            if attempt == "restricted" and laddered:
                continue
            size = restricted_size if attempt == "restricted" else 0
            if attempt == "restricted" and pricer.prices_all and fixing is not None:
                # the pool of least reduced cost from the whole table (not only the LP's
                # columns, so the restricted pool below is not built): it may prove itself,
                # and its incumbent sizes the fixing's pool (RESTRICTED_SHARE)
                pooled_fix = fix_by_pool(columns, pricer, fixing[0], fixing[1], best, size,
                                         RESTRICTED_SHARE * left(), seed)
                master = columns.master(radius)
                if pooled_fix.chosen is not None and pooled_fix.value < best_cost:
                    best, best_cost = pooled_fix.chosen, float(columns.cost[
                        pooled_fix.chosen].sum())
                    note += "; incumbent by restricted"
                if pooled_fix.proven:
                    return _Stage2("OPTIMAL", best, best_cost, best_cost, note + (
                        f"; SCIP on the {pooled_fix.pool} columns of least reduced cost, "
                        "proven by their reduced costs"))
                continue
            fixed = np.flatnonzero(xs > 0.9) if attempt == "dive" else np.zeros(0, np.int64)
            taken = np.zeros(n + 1, bool)
            taken[master.members[fixed]] = True
            free = np.flatnonzero(~taken[np.where(master.members < 0, n, master.members)]
                                  .any(axis=1))
            pool = free[np.argsort(rc[free], kind="stable")[:size]]
            keep = np.union1d(np.union1d(fixed, pool), free[xs[free] > 1e-9])
            keep = np.union1d(keep, cheapest_per_row(master.members[free], rc[free], free, 20))
            if attempt == "restricted":  # the incumbent too: the hint is then a solution
                keep = np.union1d(keep, best)
            keep = keep.astype(np.int64)
            portion = 0.25 if attempt == "dive" else 0.6
            _, found_cols, value, _ = solve_restricted(master, keep, best, portion * left(),
                                                       seed)
            if found_cols is None:
                continue
            picked = found_cols
        if value < best_cost:
            best, best_cost = picked, float(columns.cost[picked].sum())
            note += f"; incumbent by {attempt}"
    if best_cost <= bound + tolerance:
        return _Stage2("OPTIMAL", best, best_cost, bound, note + "; LP bound met")
    if fixing is None or left() <= LAST_STEP_SECONDS:
        return _Stage2("FEASIBLE", best, best_cost, bound, note)
    duals, floor = fixing

    def wider_pool(reason: str) -> _Stage2:
        """The fixing cannot prove the release (``reason``): the time left goes to SCIP
        over WIDER_POOL times the restricted search's pool, which finds cheaper releases
        and may still prove one."""
        if not pricer.prices_all or left() < WIDER_POOL_SECONDS:
            return _Stage2("FEASIBLE", best, best_cost, bound, note + reason)
        wide = fix_by_pool(columns, pricer, duals, floor, best, WIDER_POOL * restricted_size,
                           WIDER_POOL_SHARE * left(), seed)
        found, value = best, best_cost
        if wide.chosen is not None and wide.value < best_cost:
            found, value = wide.chosen, float(columns.cost[wide.chosen].sum())
        detail = f"{note}{reason}; then SCIP on the {wide.pool} columns of least reduced cost"
        if wide.proven:
            return _Stage2("OPTIMAL", found, value, value, detail + ", proven by their "
                           "reduced costs")
        return _Stage2("FEASIBLE", found, value, bound, detail)

    gap = best_cost - floor + tolerance  # no column with rc > gap is in a cheaper solution
    # no more columns than the subset-row cuts can shrink in the time left (SCIP alone
    # proves about FIXING_COLUMNS_PER_SECOND; enumerating more only overran the budget)
    fix_limit = max(1, int(min(max(limit, CUT_POOL_COLUMNS), CUT_POOL_PER_SECOND * left())))
    if not complete:
        found_all = pricer.price(duals, gap, fix_limit, deadline=end, refine=True)
        if found_all is None:
            return wider_pool("; fixing out of time" if time.perf_counter() >= end else
                              "; fixing too large")
        columns.add(found_all[0])
        master = columns.master(radius)
    rc = reduced_costs(master.members, master.cost, master.a_coef, duals.y, duals.y_a)
    keep = np.union1d(np.flatnonzero(rc <= gap), best).astype(np.int64)
    cuts: tuple[np.ndarray, ...] = ()  # each subset-row cut's columns
    tightened = None
    if min(limit, CUT_POOL_ABOVE) < len(keep) <= fix_limit:
        # the LP over them alone, with subset-row cuts, fixes again, and the cuts speed
        # SCIP up (a pool small enough for SCIP still took it 28 s without them, 11 s with)
        tightened = tighten_pool(master, keep, np.asarray(best, dtype=np.int64), best_cost,
                                 rc[keep], deadline=time.perf_counter() + min(
                                     left(), max(CUT_SHARE * left(), CUT_SECONDS)))
        if tightened is not None:
            bound = max(bound, min(best_cost, tightened.bound))
            keep, cuts = tightened.keep, tightened.cut_columns
            note += (f"; LP of the fixed columns with {len(cuts)} subset-row cuts: "
                     f"{tightened.bound:.6g}")
            if best_cost <= bound + tolerance:
                return _Stage2("OPTIMAL", best, best_cost, bound, note + ", met")
    if len(keep) > limit and tightened is None:
        return wider_pool("; fixing too large")
    if len(keep) > max(FIXING_COLUMNS_PER_SECOND * left(),
                       SMALL_POOL if left() >= SMALL_POOL_SECONDS else 0):
        return wider_pool(f"; fixing left {len(keep)} columns, too many for the time left")
    status, picked, value, found = solve_restricted(master, keep, best, left(), seed, cuts,
                                                    proving=True)
    if picked is not None and value < best_cost:
        best, best_cost = picked, float(columns.cost[picked].sum())
    note += f"; SCIP on the {len(keep)} columns left by reduced-cost fixing"
    if status == "OPTIMAL":
        return _Stage2("OPTIMAL", best, best_cost, max(bound, min(best_cost, found)), note)
    if picked is not None:
        bound = max(bound, min(best_cost, found))
    return _Stage2("FEASIBLE", best, best_cost, bound, note)
