"""Whole-release model: one m-invariant release step decided jointly and exactly.

Given the previous state (old rows bucketed by the signature of their group in T*(n-1)),
one model decides which new rows join which bucket, which new rows form groups of new
signatures, which are deferred, where counterfeits go, and how every bucket splits into
m-unique groups (m-invariance, Xiao & Tao, SIGMOD 2007: division, balancing, assignment and
split of §4.1-4.3 are one optimization here; design notes, "Optimization view" and "Release
objective and certificates"). Old rows keep their signature but may change group.

Objective, lexicographic: (a) counterfeits + w·deferrals, then (b) the perimeter of §4.3,
``Σ_G |σ(G)| · extent(real rows of G)`` with the box extent ``Σ_q (max - min)`` on normalized
QIs by default (any extent >= 0 and monotone under inclusion may be passed).

Formulation. A column ``c`` is a set ``R_c`` of real rows of distinct values, either all new
(``σ_c`` = their values padded with counterfeits up to ``m``, taken in ``padding_order``) or
holding old rows of exactly one bucket ``b`` (``σ_c = σ_b ⊇`` values of ``R_c``). With
``cf_c = |σ_c| - |R_c|``, ``new_c`` its new rows, ``cost_c = |σ_c|·extent(R_c)`` and
``w = p/q`` (the deferral weight as a fraction, denominator <= 1000)::

    stage 1   A* = min (a)                        exactly, by the count model of
                                                  :mod:`republish.models.whole_release_bound`
    stage 2   minimize   Σ_c cost_c · x_c
              subject to Σ_{c ∋ i} x_c = 1        every old row i (and new rows without deferrals)
                         Σ_{c ∋ i} x_c <= 1       every new row i (uncovered = deferred)
                         Σ_c (q·cf_c - p·new_c) x_c <= q·A* - p·N_new     ((a) = A*)
                         x_c ∈ {0, 1}

Columns are left out only where provably useless: ``cf_c <= A* - Σ_{b'≠b} forced_{b'}``
(counterfeits never exceed (a); ``forced_b``: counterfeits bucket ``b`` needs anyway), and
all-new columns hold at most ``2m - 1`` rows (a larger one splits into two of ``>= m`` rows,
no counterfeits, extents no larger). Stage 2 is solved by LP-based price-and-fix: the linear
relaxation (GLOP) gives a dual bound ``D`` and reduced costs; a restricted MIP over the
columns of least reduced cost gives an incumbent ``UB``; SCIP then solves the model over
the columns of reduced cost ``<= UB - D``, which contain every cheaper solution
(Nemhauser & Wolsey, *Integer and Combinatorial Optimization*, 1988, §II.2). When they are
too many for SCIP, the LP over them alone is tightened by subset-row cuts, whose bound and
duals fix again (:mod:`republish.models.whole_release_subset_rows`).

A family whose columns all fit in memory (``TABLE_COLUMNS``, 3 million, and
``TABLE_CELLS`` row slots) is tabulated once, vectorized, and every pricing round is
exact over the table in milliseconds; an
all-new family too large for that keeps its smallest columns in the table and prices the
larger ones by extending them (:mod:`republish.models.whole_release_tables`,
:mod:`republish.models.whole_release_extension`). There, SCIP over the columns of least
reduced cost proves its answer when every column left out has a reduced cost above the
gap (:func:`~republish.models.whole_release_restricted.fix_by_pool`). Otherwise, while all
columns number at most ``max_columns`` they are enumerated. Past that, the
smallest column families are enumerated whole and the others up to a box-extent radius;
column generation then prices the missing columns by their box extent (enumeration pruned
by reduced cost, :func:`republish.models.whole_release_enumeration.enumerate_columns`), exactly
for the box extent and for any extent with ``box_points`` (the perimeter's hierarchy QIs:
leaf codes over their span, :meth:`republish.objectives.ReleaseCost.box_points`): anchors
are found by the box points, whose distances are below the extent, and partial columns
are pruned by the extent itself (:func:`~republish.models.whole_release_extent_tables.
box_point_lengths`); an anchor whose enumeration is too large is searched up to its least
reduced cost once the LP has converged, with a completion bound that charges each later
row the extent it adds; each complete pricing round gives a valid bound, and the
reduced-cost fixing enumerates the columns of reduced cost ``<= UB - D`` the same way, so
the answer can still be proven optimal. When even pricing has too many candidates, columns
of a growing radius are priced instead (better columns, no bound). The count plan's
release and the hint are always columns, so the answer is never worse than either;
whatever is not proven gets the best valid bound found (LP duality, the pair bound, the
cycle-cover bound of :func:`whole_release_bound`, or, where no table holds every column,
the sum of one relaxation per QI, :mod:`republish.models.whole_release_separable_bound`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from republish.models.whole_release_answer import (
    Candidate,
    certified_solution,
    release_objectives,
)
from republish.models.whole_release_bound import (
    CYCLE_COVER_ROWS,
    BoxExtent,
    CountPlan,
    Extent,
    ReleaseCounts,
    WholeReleaseBound,
    cycle_cover_bound,
    families,
    optimal_counts,
    rational_weight,
    whole_release_bound,
)
from republish.models.whole_release_bound_process import run_beside
from republish.models.whole_release_columns import (
    POOL_PER_ROW,
    Columns,
    a_row_rhs,
    initial_columns,
    stage2,
)
from republish.models.whole_release_counts import count_columns, realize_counts
from republish.models.whole_release_extent_tables import tabulated
from republish.models.whole_release_large import solve_by_neighbourhoods
from republish.models.whole_release_pair_bound import lower_bound_b
from republish.models.whole_release_polish import (
    POLISH_SHARE,
    UNIQUE_LARGE_ROWS,
    polished_start,
    unique_search_seconds,
)
from republish.models.whole_release_pricing import nearest_columns, pricing_problem
from republish.models.whole_release_problem import (
    WholeReleaseProblem,
    WholeReleaseSolution,
    _error,
    as_matrix,
    group_signature,
    release_problems,
)
from republish.models.whole_release_relaxation_ladder import ladder_candidate
from republish.models.whole_release_separable_bound import SeparableBound, separable_bound
from republish.models.whole_release_subset_bound import (
    SubsetBound,
    planned_size,
    subset_bound,
    subset_seconds,
)
from republish.models.whole_release_tables import (
    TABLE_COLUMNS,
    TabledPricing,
    built_in_time,
    table_limit,
)
from republish.objectives import ReleaseCost

__all__ = [
    "BoxExtent",
    "WholeReleaseBound",
    "WholeReleaseProblem",
    "WholeReleaseSolution",
    "group_signature",
    "realize_counts",
    "release_problems",
    "solve_whole_release",
    "whole_release_bound",
]


Hint = tuple[Sequence[Sequence[int] | np.ndarray], Sequence[int] | np.ndarray]
#: Above this many rows (box extent) the set-partitioning model is not built: the release
#: is improved by large-neighbourhood search, and the cycle-cover bound is computed only
#: up to CYCLE_COVER_ROWS rows (above it, measured on Adult, it proves 0).
WHOLE_MODEL_ROWS = 2_000
#: Share of the budget (at most these seconds) kept from stage 2 for the row, pair and
#: cycle-cover bounds of an unproven answer (0.1-0.15 s on 200 rows). None where the
#: table bounds every column (``TabledPricing.bounds_by_subsets``): stage 2's bound, from
#: its pricing rounds, was the larger on every unproven first release of 200 Adult rows
#: (m = 2: 25.45, 38.32, 35.30 against cycle covers of 22.57, 32.29, 31.18; m = 3 at 1 s:
#: 57.8-69.8 against 27.6-31.2), and stage 2 needs the time to prove.
BOUNDS_RESERVE, BOUNDS_RESERVE_SECONDS = 0.1, 0.2
#: A release with old rows whose columns do not all fit in a table (or whose table would end
#: past TABLE_SHARE of the budget, TABLE_SECONDS_PER_COLUMN a column) computes the bound from
#: one relaxation per QI (:mod:`republish.models.whole_release_separable_bound`) before
#: the table is built, for at most SEPARABLE_SHARE of its budget (the model gets what it
#: leaves): there column generation by anchors neither converges nor bounds (later
#: releases of 200 Adult rows at m = 7: pair bounds of 56-163 against releases of 359-417;
#: the relaxations per QI converge in 0.7-1.0 s to 237-343, the same releases found). It
#: runs where that share gives it SEPARABLE_SECONDS_PER_ROW a row: the QIs of few values
#: converge first (at 1 s, 0.5 s bound those releases by 217-302).
SEPARABLE_SHARE, SEPARABLE_SECONDS_PER_ROW = 0.5, 1e-3
#: The pricing tables are built by TABLE_SHARE of the budget, or not at all. A table that
#: would end past SEPARABLE_TABLE_SHARE leaves the LP too few rounds to bound, and the
#: relaxations per QI run instead: later releases of 200 Adult rows at m = 6 (seed 2) whose
#: tables of 1.1-1.3 million columns ended at 0.5-0.6 s of 1 s reported no bound at all,
#: where tables of up to 650,000 columns prove at 1 s (seed 1).
TABLE_SHARE, SEPARABLE_TABLE_SHARE = 0.6, 0.35
#: With ``workers >= 2`` the relaxations per QI run in a second process beside the model
#: until SEPARABLE_BESIDE_MARGIN of the budget is left (its answer travels through a pipe),
#: and the model keeps the whole budget: in one process their half of a 1 s budget bounds
#: later releases at m = 7 by 217-302, converged 237-343 (session 25), and three quarters
#: raised (b) by 3-6 % on four of five later releases at m = 6 (seed 2). Beside, they
#: run whether or not a table is built: a later release at m = 6 (seed 2) whose table of
#: 1.3 million columns fits proves at 2.97 s, and at 2.8 s its LP bound is 37 % below.
SEPARABLE_BESIDE_MARGIN = 0.05
#: A first release at m >= SEPARABLE_FIRST_M gets them for SEPARABLE_FIRST_SHARE: its
#: m-row relaxation is over four-row groups there, and bounds more loosely than they do
#: (first releases of 200 Adult rows, 10 s: m = 6, 101.4 against 173.0 of a release of
#: 256.3; m = 7, 41.9 against 242.7 of 387.2; at m = 5 the four-row relaxation bounds
#: higher, 101.4 against 93.2, and keeps the time).
SEPARABLE_FIRST_SHARE, SEPARABLE_FIRST_M = 0.2, 6
#: A release with old rows whose columns are priced from a table starts its LP from each
#: row's LATER_START_PER_ROW cheapest columns (POOL_PER_ROW, 10, without old rows). Five
#: later releases of 200 Adult rows at m = 6 (tables of 540,000-770,000 columns, a round
#: 0.1 s) converged in 4-7 rounds instead of 7-9, proven in 1.0-1.7 s instead of 1.3-2.5
#: s (3 s budget); at m = 3-5 every later release stayed proven at 1 s, up to 0.1 s later
#: (smaller tables, rounds of 0.01-0.03 s). First releases keep 10: at 40 one of ten
#: samples of 200 rows at m = 2 went unproven at 1 s.
LATER_START_PER_ROW = 30
#: A release without old rows whose m-row groups do not fit in a table gives this share of
#: its budget to the m-row relaxation (:mod:`republish.models.whole_release_subset_bound`;
#: 200 Adult rows at m = 4 converge in 1.7-2.6 s from each row's cheap groups), where it
#: has its least time (:func:`~republish.models.whole_release_subset_bound.subset_seconds`).
#: Above UNIQUE_LARGE_ROWS rows, where the free regrouping takes most of the budget, the
#: relaxation runs before it where it gets SUBSET_ROOM_NEEDED times that least time, up to
#: SUBSET_ROOM times (it converged in 1.6-1.8 times the time of its first bound there),
#: and the search keeps two thirds of its time; the ladder over its groups
#: (:mod:`republish.models.whole_release_relaxation_ladder`) then takes LADDER_SHARE of the
#: search's time; all from a budget of FIRST_BUDGET times that least time. Adult, m = 3,
#: (b) against the search alone: 1,000 rows -8 % at 10 s and 20 s, +7 % at 5 s; 1,500
#: rows -5 % at 30 s, +10 % at 20 s; 2,000 rows +10 % at 60 s (its pools took SCIP 18 s).
SUBSET_SHARE, SUBSET_ROOM, SUBSET_ROOM_NEEDED, LADDER_SHARE = 0.5, 2.0, 1.5, 0.5
FIRST_BUDGET = 5.0
#: With ``workers >= 2`` and a budget of at least SUBSET_BESIDE_SECONDS, the relaxation runs
#: in a second process (:func:`~republish.models.whole_release_bound_process.run_beside`)
#: until SUBSET_BESIDE_MARGIN of the budget is left, and the model keeps the whole budget,
#: where it would not run in the process: the ladder needs its groups (200 Adult rows at
#: m = 4, ten samples, 3 / 5 / 10 s: in the process with the ladder Σ (b) 1,117 / 1,077 /
#: 1,034 and median gaps 13 / 9 / 5 %, beside 1,140 / 1,119 / 1,096 and 13 / 11 / 10 %).
SUBSET_BESIDE_SECONDS, SUBSET_BESIDE_MARGIN = 1.5, 0.05
#: With the box extent the missing columns are priced exactly, so the start need not hold
#: them all: at most this many (200 rows, m = 3: the 196,000 columns of extent <= 0.63
#: took 2 s per LP), plus each row's nearest columns up to NEAREST_START_ROWS rows.
PRICED_START_COLUMNS = 20_000
#: Seconds left at least for pricing a large all-new family by extension: its table takes
#: 0.3-0.6 s and each exact round 0.3-0.4 s (200 Adult rows, m = 3). The rounds over the
#: table alone bound the release (``TabledPricing.row_floor``) and take 0.03-0.12 s, so a
#: 1 s first release at m = 3 gets them: bounds of 57.8-69.8 where the anchor pricing's
#: start left the row bound, 33.1-40.0.
EXTENSION_SECONDS = 0.6
NEAREST_START_ROWS = 3_000


def _check_hint(problem: WholeReleaseProblem, hint: Hint | WholeReleaseSolution
                ) -> tuple[list[np.ndarray], np.ndarray]:
    try:
        groups, deferred = (hint.groups, hint.deferred) if isinstance(
            hint, WholeReleaseSolution) else hint
        rows = [np.sort(np.asarray(g, dtype=np.int64).ravel()) for g in groups]
        late = np.sort(np.asarray(deferred, dtype=np.int64).ravel())
    except (TypeError, ValueError) as exc:
        raise _error("solve_whole_release", "hint", "a pair (groups, deferred) of row-index "
                     "arrays", type(hint).__name__) from exc
    broken = release_problems(problem, rows, late)
    if broken:
        raise _error("solve_whole_release", "hint", "a valid release", "; ".join(broken[:3]))
    return rows, late


def solve_whole_release(problem: WholeReleaseProblem, *, time_limit: float, workers: int = 1,
                        seed: int = 0, hint: Hint | WholeReleaseSolution | None = None,
                        max_columns: int = 200_000, extent: Extent | None = None,
                        keep_signatures: bool = False) -> WholeReleaseSolution:
    """Solve the release step of ``problem`` (module docstring): (a) exactly by the count
    model, then (b) by set partitioning.

    ``hint``: a valid release ``(groups, deferred)`` (or a solution); the answer is never
    lexicographically worse. ``workers``/``seed`` go to CP-SAT (count model), the seed to
    SCIP; at ``workers >= 2`` a release above ``WHOLE_MODEL_ROWS`` rows computes its bound
    on (b) in a second process beside its search. ``max_columns`` caps the columns
    enumerated into the model at once (the pricing tables, arrays of rows and costs, have
    their own cap, ``TABLE_COLUMNS``).
    ``extent``: ``extent(rows) -> float``, >= 0 and monotone under inclusion (default: the
    box extent of ``points``). ``keep_signatures``: search at any size as above
    ``WHOLE_MODEL_ROWS`` (:mod:`~republish.models.whole_release_large`), whose moves keep
    every group's signature: a first release started from ``hint`` keeps its signatures
    and their counts.
    Statuses: ``OPTIMAL`` (proven, up to the LP/MIP solvers' 1e-9 tolerances), ``FEASIBLE``
    (the model's answer, unproven), ``HEURISTIC`` (the hint or the count plan's release,
    unimproved), ``TIMEOUT`` (no release found), ``INFEASIBLE``. ``bound_a`` bounds (a);
    ``bound_b`` bounds (b) over the releases whose (a) is optimal.
    """
    started = time.perf_counter()
    owner = "solve_whole_release"
    if isinstance(time_limit, bool) or not isinstance(time_limit, int | float) or not (
            0 < time_limit < math.inf):
        raise _error(owner, "time_limit", "a float in the range (0, inf)", repr(time_limit))
    for name, value, low in (("workers", workers, 1), ("seed", seed, 0),
                             ("max_columns", max_columns, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise _error(owner, name, f"an int in the range [{low}, inf)", repr(value))
    if extent is not None and not callable(extent):
        raise _error(owner, "extent", "a callable extent(rows) -> float or None", repr(extent))
    measure: Extent = extent if extent is not None else BoxExtent(problem.points)
    weight, counts = rational_weight(problem.deferral_weight), ReleaseCounts.of(problem)
    candidates = []
    if hint is not None:
        groups, late = _check_hint(problem, hint)
        candidates.append(Candidate(
            *release_objectives(problem, groups, len(late), weight, measure), groups, late,
            "hint"))
    if candidates and candidates[0].a == 0:  # (a) >= 0: the hint's (a) is proven optimal
        plan = CountPlan("OPTIMAL", weight, 0, 0)
    else:
        plan = optimal_counts(problem, time_limit=time_limit / 2, workers=workers, seed=seed)
    bound_a = plan.bound / weight.denominator
    if plan.status == "INFEASIBLE":
        return certified_solution(problem, None, ("INFEASIBLE", "INFEASIBLE"),
                                  (math.inf, math.inf), started, 0, "count model infeasible")
    if plan.value is not None and plan.groups is not None:
        groups, late = realize_counts(problem, plan)
        candidates.append(Candidate(
            *release_objectives(problem, groups, len(late), weight, measure), groups, late,
            "count plan"))
    if not candidates:
        return certified_solution(problem, None, ("TIMEOUT", "TIMEOUT"), (bound_a, 0.0),
                                  started, 0, "count model out of time")
    incumbent = min(candidates, key=lambda c: (c.a, c.b))
    a_star = Fraction(plan.value, weight.denominator) if plan.status == "OPTIMAL" and \
        plan.value is not None else None
    if len(problem.values) > WHOLE_MODEL_ROWS or keep_signatures:
        return solve_by_neighbourhoods(problem, incumbent, candidates, a_star, bound_a, weight,
                                  measure, started, time_limit, seed, workers)
    fams = families(problem, counts, math.floor(incumbent.a))  # polishing keeps (a)
    # the same numbers as `measure`, hierarchy QIs read from tables (pricing costs columns)
    table = tabulated(measure)
    # every column fits in a table: column generation converges in a fraction of a second
    # and the MIPs find incumbents, so the local search only gets a small share
    vectorized = getattr(table, "batch", None) is not None
    every_column = sum(count_columns(f, counts.is_new) for f in fams)
    tabled = vectorized and every_column <= min(
        TABLE_COLUMNS, table_limit(max([problem.m * 2 - 1, *counts.signature_size.tolist()])))
    # the all-new family's smallest columns fit in a table: it is priced from tables
    smallest = [dataclasses.replace(f, hi=max(f.lo, 1)) for f in fams if not f.need_old]
    extendable = vectorized and bool(smallest) and sum(
        count_columns(f, counts.is_new) for f in smallest) <= TABLE_COLUMNS
    polish = POLISH_SHARE * time_limit if problem.has_old_rows or tabled else \
        unique_search_seconds(len(problem.values), time_limit, priced_from_tables=extendable)
    # groups of m rows do not fit in a table, so column generation proves no LP bound: the
    # relaxation over m-row groups alone does (four-row groups from m = 5), priced from the
    # subsets one row smaller; on a second core for the whole budget, else first for its
    # share
    least = subset_seconds(len(problem.values))
    size = planned_size(problem, a_star, table, (1 - SUBSET_BESIDE_MARGIN) * time_limit) \
        if not extendable else None
    end = started + (1 - SUBSET_BESIDE_MARGIN) * time_limit
    # above UNIQUE_LARGE_ROWS rows the search takes most of the budget: the relaxation
    # first where it has SUBSET_ROOM_NEEDED times its least time besides two thirds of the
    # search's (up to SUBSET_ROOM times; it stops where it converges), then the ladder
    room = min(SUBSET_ROOM * least, end - time.perf_counter() - 2 * polish / 3)
    first = size is not None and len(problem.values) > UNIQUE_LARGE_ROWS and \
        room >= SUBSET_ROOM_NEEDED * least and time_limit >= FIRST_BUDGET * least
    beside = run_beside(subset_bound, problem, table, incumbent.groups, size=size,
                        deadline=end, accepts=lambda answer: isinstance(answer, SubsetBound),
                        report="report") \
        if size is not None and not first and workers >= 2 and \
        time_limit >= SUBSET_BESIDE_SECONDS and (len(problem.values) > UNIQUE_LARGE_ROWS or
                                                 SUBSET_SHARE * time_limit < least) else None
    subset = None
    if first:
        subset = subset_bound(problem, table, incumbent.groups, size=size,
                              deadline=time.perf_counter() + room)
        incumbent = ladder_candidate(problem, table, subset, incumbent, candidates, weight,
                                     deadline=time.perf_counter() + LADDER_SHARE * min(
                                         polish, end - time.perf_counter()), seed=seed)
    incumbent = polished_start(problem, incumbent, candidates, weight, measure,
                               deadline=min(time.perf_counter() + polish, end), seed=seed)
    # below UNIQUE_LARGE_ROWS rows, the relaxation's share after the search, and the ladder
    # for half of what is left
    relax_end = min(time.perf_counter() + SUBSET_SHARE * time_limit, end)
    if subset is None and size is not None and beside is None and \
            relax_end - time.perf_counter() >= least:
        subset = subset_bound(problem, table, incumbent.groups, size=size, deadline=relax_end)
        incumbent = ladder_candidate(problem, table, subset, incumbent, candidates, weight,
                                     deadline=time.perf_counter() + LADDER_SHARE * (
                                         end - time.perf_counter()), seed=seed)
    # where not every column fits in a table (or the table would end past its deadline,
    # so TabledPricing does not build it), a later release's column generation (by
    # anchors) neither converges nor bounds: the relaxations per QI bound it, before the
    # table takes the time (SEPARABLE_SHARE)
    share = (SEPARABLE_SHARE if problem.has_old_rows else SEPARABLE_FIRST_SHARE
             if problem.m >= SEPARABLE_FIRST_M else 0.0) * time_limit
    room = min(share, started + time_limit - time.perf_counter())
    cost = getattr(measure, "cost", None)  # the QIs of the perimeter or NCP
    separable = (not tabled or not built_in_time(
        every_column, started + SEPARABLE_TABLE_SHARE * time_limit)) and isinstance(
        cost, ReleaseCost) and room >= SEPARABLE_SECONDS_PER_ROW * len(problem.values)
    # with a second core they run beside the model for the whole budget, which keeps its
    # own (SEPARABLE_BESIDE_MARGIN), table or not: a table built in time can still leave
    # the LP unconverged at the deadline, and a proven release stops them
    beside_end = started + (1 - SEPARABLE_BESIDE_MARGIN) * time_limit
    separable_beside = run_beside(
        separable_bound, problem, cost, incumbent.a, weight, incumbent.groups,
        deadline=beside_end, report="report",
        accepts=lambda answer: isinstance(answer, SeparableBound)) \
        if share > 0 and isinstance(cost, ReleaseCost) and workers >= 2 and beside is None \
        and beside_end - time.perf_counter() >= SEPARABLE_SECONDS_PER_ROW * len(
            problem.values) else None
    per_qi = separable_bound(problem, cost, incumbent.a, weight, incumbent.groups,
                             deadline=time.perf_counter() + room) \
        if separable and separable_beside is None else None
    # Missing columns are enumerated, priced and bounded by their box extent on `pricing`'s
    # points, which must bound the extent from below (equal for the box extent).
    pricing = pricing_problem(problem, extent, table)
    box = pricing is not None
    width = max([problem.m * 2 - 1, *counts.signature_size.tolist(),
                 *(len(g) for c in candidates for g in c.groups)])
    rhs = a_row_rhs(problem, counts, incumbent.a, weight)
    columns = Columns(problem, counts, table, weight, rhs, width)
    # families whose columns all fit in a table are priced from it (exact, vectorized)
    pricer = TabledPricing(pricing or problem, columns, fams,
                           deadline=started + TABLE_SHARE * time_limit,
                           limit=min(TABLE_COLUMNS, table_limit(width))
                           if vectorized and (tabled or box) else 0,
                           extend=time_limit - (time.perf_counter() - started) >=
                           EXTENSION_SECONDS)
    box = box or pricer.prices_all  # the tables price any extent
    if pricer.prices_all:  # every column is priced from the table: start from it
        parts = [pricer.start_columns(LATER_START_PER_ROW if problem.has_old_rows
                                      else POOL_PER_ROW)]
        if pricing is not None and not pricer.covers_all:  # and larger columns per row
            parts += [nearest_columns(pricing, family) for family in fams]
        radius = np.full(len(problem.values), -math.inf)  # the pricing rounds bound instead
        detail = f"every column tabled ({pricer.tabled}), priced from the table" if \
            pricer.covers_all else (f"{pricer.tabled} columns tabled, the larger ones "
                                    "priced by extending them")
    elif time_limit - (time.perf_counter() - started) > 0.005:
        parts, radius, detail = initial_columns(
            pricing or problem, fams, counts.is_new, max_columns,
            deadline=started + 0.6 * time_limit,
            partial_limit=PRICED_START_COLUMNS if box else None)
        if pricing is not None and len(problem.values) <= NEAREST_START_ROWS and \
                not np.isposinf(radius).all():
            parts += [nearest_columns(pricing, family) for family in fams]
    else:
        parts, radius, detail = [], np.full(len(problem.values), -math.inf), "out of time"
    if not box:  # a radius is a box extent: it says nothing of another extent
        radius = np.where(~np.isposinf(radius), -math.inf, radius)
    if subset is not None and subset.size == problem.m and len(subset.pool):  # its cheap groups
        parts.append(subset.pool)
    for part in parts:
        columns.add(part)
    start = columns.add(as_matrix(incumbent.groups)).tolist() if incumbent.groups else []
    stage, scip_bound = "TIMEOUT", -math.inf
    if len(columns.cost) == 0 and np.isposinf(radius).all():  # no group: all deferred
        stage, scip_bound = "OPTIMAL", 0.0
    elif time_limit - (time.perf_counter() - started) > 0.005:
        # the final bounds of an unproven answer keep a share of the budget, unless the
        # table bounds every column: then every pricing round bounds, and better than they
        reserve = 0.0 if pricer.bounds_by_subsets else min(BOUNDS_RESERVE * time_limit,
                                                           BOUNDS_RESERVE_SECONDS)
        result = stage2(columns, fams, radius, start, box,
                        max(time_limit - (time.perf_counter() - started) - reserve, 0.005),
                        seed, max_columns, pricing=pricing, pricer=pricer)
        stage, scip_bound, detail = result.status, result.bound, f"{detail}; {result.note}"
        groups = [columns.members[c][columns.members[c] >= 0] for c in result.chosen]
        covered = np.zeros(len(problem.values), bool)
        for g in groups:
            covered[g] = True
        late = np.flatnonzero(~covered)
        candidates.append(Candidate(
            *release_objectives(problem, groups, len(late), weight, measure), groups, late,
            "model"))
    best = min(candidates, key=lambda c: (c.a, c.b))  # ties: the hint, the count plan
    a_done = a_star is not None and best.a == a_star
    status_a = "OPTIMAL" if a_done else "FEASIBLE" if best.source == "model" else "HEURISTIC"
    if a_done and stage == "OPTIMAL":
        status_b, bound_b = "OPTIMAL", min(best.b, scip_bound)
    else:
        status_b = "FEASIBLE" if best.source == "model" else "HEURISTIC"
        grace = started + time_limit + min(1.0, 0.1 * time_limit)
        if separable_beside is not None:  # its bounds so far came as they rose
            per_qi = separable_beside.collect(started + time_limit)
        if per_qi is not None:
            scip_bound = max(scip_bound, per_qi.bound)
            detail += (f"; relaxations per QI: {per_qi.bound:.6g}"
                       f"{' (converged)' if per_qi.converged else ''}")
        # no cycle cover after a relaxation here: on 1,000-2,000 Adult rows at m = 3 it
        # took 0.8-2.3 s for 58-85, below the row bounds (74-97) and relaxations (148-265)
        bound_b = max(0.0, scip_bound,
                      lower_bound_b(problem, measure, incumbent.a, weight, deadline=grace,
                                    groups=best.groups, then_search=True),
                      cycle_cover_bound(problem, measure, float(incumbent.a), weight,
                                        deadline=grace)
                      if len(problem.values) <= CYCLE_COVER_ROWS and (
                          not pricer.bounds_by_subsets or scip_bound <= 0) and (
                          subset is None or not math.isfinite(subset.bound)) else 0.0)
    if separable_beside is not None and status_b == "OPTIMAL":  # proven: nothing to wait for
        separable_beside.collect(time.perf_counter())
    if beside is not None:  # the relaxation beside has had the budget (a proven release
        # waits for nothing); its bounds so far came as they rose
        subset = beside.collect(time.perf_counter() if status_b == "OPTIMAL" else
                                started + time_limit)
    if subset is not None and status_b != "OPTIMAL":  # here or beside
        bound_b = max(bound_b, subset.bound)
    if subset is not None:
        detail += (f"; {'m' if subset.size == problem.m else subset.size}-row relaxation: "
                   f"{subset.bound:.6g} after {subset.rounds} rounds"
                   f"{' (converged)' if subset.converged else ''}")
    answer = certified_solution(problem, best, (status_a, status_b), (bound_a, bound_b),
                                started, len(columns.cost),
                                f"{detail}; answer from the {best.source}")
    broken = release_problems(problem, answer.groups, answer.deferred)
    if broken:
        raise RuntimeError(f"whole-release model produced an invalid release: {broken}")
    return answer
