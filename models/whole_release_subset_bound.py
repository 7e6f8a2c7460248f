"""A lower bound on objective (b) of a release without old rows, from the linear relaxation
over groups of exactly ``m`` rows.

A release without old rows (the first release of the m-invariance paper, Xiao & Tao,
SIGMOD 2007, §4) whose (a) is 0 holds neither counterfeits nor deferrals (both cost (a)),
so it is a partition of its rows into m-unique groups (§3: at least ``m`` rows, of
distinct sensitive values), a group ``G`` of ``k >= m`` rows costing ``k·ext(G)`` (the
perimeter of §4.3; NCP is the same number without counterfeits). Its ``m``-row subsets
``S``, each at weight ``1 / C(k-1, m-1)``, cover every row of ``G`` exactly once, and with a
monotone extent::

    Σ_S m·ext(S) / C(k-1, m-1) <= C(k, m)·m·ext(G) / C(k-1, m-1) = k·ext(G)

so any release is dominated by a fractional cover with ``m``-row groups only, and the
linear relaxation ``min Σ_S m·ext(S)·x_S`` s.t. every row covered once, ``x >= 0``, over
the ``m``-row groups of distinct values alone bounds (b) from below. Not in the paper.
The same argument holds for subsets of any size ``m' <= m`` (weights ``1 / C(k-1, m'-1)``,
the sum again ``<= k·ext(G)``), so where the ``(m - 1)``-row subsets of a table do not fit
in memory (m >= 5 on 200 rows: 35 million four-row subsets), the relaxation over groups
of four rows bounds the release, more loosely (:func:`relaxation_size`).
Where the set-partitioning model of :mod:`republish.models.whole_release` cannot price its
groups of ``m`` to ``2m - 1`` rows (200 Adult rows at m = 4: tens of millions of four-row
groups and more of five to seven), this smaller relaxation converges: it is solved by
column generation (GLOP, the model's own
:class:`~republish.models.whole_release_master.IncrementalMaster`, every row covered
exactly once), pricing every ``m``-row group exactly by extending the table of all
``(m - 1)``-row subsets of distinct values by one row
(:class:`republish.models.whole_release_extension.Extension`). Each complete pricing round
gives a valid Lagrangian bound, the LP's value plus each anchor row's least negative
reduced cost (Nemhauser & Wolsey, *Integer and Combinatorial Optimization*, 1988, §II.2;
disjoint groups have distinct anchors), of the ``n / m`` most negative anchors only (a
cover weighs ``n / m`` groups in all), so the bound holds at any deadline.

Measured on the first release of 200 Adult rows at m = 4 (the model's best 109.1 at 10 s;
the row bound, the bound until now, 53.3): the relaxation converges to 101.4 in 7 rounds
and 6.7 s, of which the first two (from the start's degenerate duals) take 4 s.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from republish.models.whole_release_bound import Master, Relaxation, reduced_costs
from republish.models.whole_release_columns import Columns, least_of_solution
from republish.models.whole_release_counts import (
    Extent,
    Family,
    ReleaseCounts,
    count_columns,
    families,
)
from republish.models.whole_release_extension import MAX_PARTIALS, Extension, _extents
from republish.models.whole_release_master import IncrementalMaster
from republish.models.whole_release_problem import WholeReleaseProblem
from republish.models.whole_release_restricted import cheapest_per_row
from republish.models.whole_release_tables import TABLE_COLUMNS, all_columns

__all__ = ["SubsetBound", "near_extensions", "near_rows", "planned_size", "relaxation_size",
           "subset_bound", "subset_bound_applies", "subset_seconds"]

#: Columns added to the LP per pricing round at most (those of least reduced cost).
PER_ROUND = 5_000
#: Candidate groups an early round (below 0) forms at most: from degenerate duals
#: millions pass, and a few thousand of them are all the LP takes.
EARLY_PARTIALS = 200_000
#: Columns added per anchor row per round at most, besides the PER_ROUND least overall.
PER_ANCHOR = 3
#: The first rounds price only groups below ``-EARLY_SHARE ×`` the LP's cost per row; the
#: threshold shrinks SHRINK-fold whenever fewer than PER_ROUND pass, to 0 at the end.
EARLY_SHARE, SHRINK = 1.0, 16.0
#: The LP starts from each row's START_SUBSETS cheapest ``(m - 1)``-row subsets, each
#: extended by its START_EXTENSIONS cheapest rows, besides the incumbent's groups.
START_SUBSETS, START_EXTENSIONS = 30, 5
#: Above JOIN_CELLS start subsets times rows, a start subset is extended only by its
#: members' NEAR_ROWS nearest rows of another value (:func:`cheapest_groups`).
JOIN_CELLS, NEAR_ROWS = 4_000_000, 12
#: The relaxation runs where it has at least :func:`subset_seconds`: with 1 s (a 2 s
#: release) it bounded none of five 200-row Adult samples at m = 4, with 1.5 s four (gaps
#: 11-28 %, against 53-56 % from the row bound); the model's budget is what the release
#: step leaves it (about 2.9 s of 3 s), hence SUBSET_SECONDS = 1.25 s and not 1.5 s.
#: Larger releases need more for their first complete round: SUBSET_SECONDS_AT_1000 ×
#: (rows / 1,000)³, Adult at m = 3 giving its first bound after 1.8 s on 1,000 rows, 5.8 s
#: on 1,500 and 13.8-14.6 s on 2,000 (converged at 3.2, 10.8 and 21.5-24 s).
SUBSET_SECONDS, SUBSET_SECONDS_AT_1000 = 1.25, 1.8
#: Above this many rows the relaxation over groups smaller than m stays below the row
#: bound: 148.4 against 151.0 on 1,000 Adult rows at m = 4 (three-row groups), 89.0
#: against 126.7 on 400 at m = 5 (three-row groups), where on 400 rows at m = 4 it raised
#: the bound from 80.9 to 89.0.
SMALLER_GROUPS_ROWS = 400
#: Groups per row of least reduced cost at the last duals that :attr:`SubsetBound.pool`
#: keeps, besides the LP's support.
POOL_PER_ROW = 8


@dataclass(frozen=True)
class SubsetBound:
    """``bound``: the best Lagrangian bound on (b) (``-inf``: no complete round);
    ``lp_value`` the relaxation's last value, ``converged`` when no group prices below 0
    (then ``bound == lp_value``); ``rounds`` pricing rounds; ``columns`` in the LP;
    ``size``: rows per group of the relaxation; ``pool``: its groups in the last LP's
    support and each row's POOL_PER_ROW of least reduced cost, ``(C, size)`` rows
    ascending (where ``size == m``, groups of the release model too: a start for its
    column generation and its searches); ``duals``: the last LP's duals of the rows
    (empty without an LP); ``near``: each row's NEAR_ROWS nearest rows of another value
    (:func:`near_rows`)."""

    bound: float
    lp_value: float
    converged: bool
    rounds: int
    columns: int
    wall_time_s: float
    size: int = 0
    pool: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 1), np.int64),
                                         compare=False, repr=False)
    duals: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0), compare=False,
                                          repr=False)
    near: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 1), np.int64),
                                         compare=False, repr=False)


def _all_new(problem: WholeReleaseProblem, counts: ReleaseCounts) -> Family | None:
    found = [f for f in families(problem, counts, 0) if not f.need_old]
    return found[0] if found else None


def subset_bound_applies(problem: WholeReleaseProblem, a_star: Fraction | None,
                         measure: Extent, size: int | None = None) -> bool:
    """Whether :func:`subset_bound` holds and can run with groups of ``size`` rows
    (default ``m``; at most ``m``): no old rows, (a) proven 0 with deferrals costing (a),
    a vectorized extent, ``size >= 2`` and the ``(size - 1)``-row subsets within
    ``TABLE_COLUMNS``."""
    size = problem.m if size is None else size
    if a_star is None or a_star != 0 or problem.has_old_rows or \
            not 2 <= size <= problem.m:
        return False
    if problem.allow_deferrals and problem.deferral_weight <= 0:
        return False
    if getattr(measure, "batch", None) is None or getattr(measure, "pairwise", None) is None:
        return False
    counts = ReleaseCounts.of(problem)
    family = _all_new(problem, counts)
    if family is None:
        return False
    base = dataclasses.replace(family, lo=size - 1, hi=size - 1)
    return count_columns(base, counts.is_new) <= TABLE_COLUMNS


def relaxation_size(problem: WholeReleaseProblem, a_star: Fraction | None,
                    measure: Extent) -> int | None:
    """The largest group size ``<= m`` with which :func:`subset_bound` applies, or None:
    ``m`` where the ``(m - 1)``-row subsets fit in a table (200 Adult rows at m = 4),
    four at m >= 5 there, whose four-row subsets do not."""
    return next((size for size in range(problem.m, 1, -1)
                 if subset_bound_applies(problem, a_star, measure, size)), None)


def subset_seconds(rows: int) -> float:
    """The least time for which the relaxation runs on a release of ``rows`` rows
    (SUBSET_SECONDS, SUBSET_SECONDS_AT_1000)."""
    return max(SUBSET_SECONDS, SUBSET_SECONDS_AT_1000 * (rows / 1_000) ** 3)


def planned_size(problem: WholeReleaseProblem, a_star: Fraction | None, measure: Extent,
                 seconds: float) -> int | None:
    """The group size of the relaxation worth running on ``problem`` within ``seconds``
    (:func:`relaxation_size`), or None: it needs more time (:func:`subset_seconds`), or
    its groups would be smaller than m on more than SMALLER_GROUPS_ROWS rows."""
    if seconds < subset_seconds(len(problem.values)):
        return None
    size = relaxation_size(problem, a_star, measure)
    if size is not None and size < problem.m and len(problem.values) > SMALLER_GROUPS_ROWS:
        return None
    return size


def subset_bound(problem: WholeReleaseProblem, measure: Extent,
                 groups: Sequence[np.ndarray], *, deadline: float,
                 per_round: int = PER_ROUND,
                 report: Callable[[SubsetBound], object] | None = None,
                 size: int | None = None) -> SubsetBound:
    """The bound of the module docstring for ``problem`` over groups of ``size`` rows
    (default ``m``; check :func:`subset_bound_applies` first), starting from the
    ``size``-row subsets of a release's ``groups``; column generation stops at
    convergence or at ``deadline`` (``time.perf_counter()`` seconds). ``report`` receives
    the bound so far (without a pool) after each complete round that raised it."""
    started = time.perf_counter()
    if size is not None and size != problem.m:  # groups of `size` rows bound it (docstring)
        problem = dataclasses.replace(problem, m=size)
    m, n = problem.m, len(problem.values)
    counts = ReleaseCounts.of(problem)
    family = _all_new(problem, counts)
    assert family is not None
    columns = Columns(problem, counts, measure, Fraction(1), 0, m)
    base = all_columns(dataclasses.replace(family, lo=m - 1, hi=m - 1), counts.is_new, m - 1)
    extension = Extension(dataclasses.replace(family, lo=m, hi=m), m - 1, base,
                          _extents(measure, base) if len(base) else np.zeros(0))
    # (a) = 0 leaves no deferral: every row is covered exactly once
    exact, no_a = np.ones(n, dtype=bool), np.zeros(n, dtype=np.int64)

    def master() -> Master:
        return dataclasses.replace(columns.master(np.full(n, -math.inf)), exact=exact,
                                   row_a=no_a)

    start = [subset for g in groups
             for subset in itertools.combinations(sorted(np.asarray(g).tolist()), m)]
    columns.add(np.array(start, dtype=np.int64).reshape(-1, m))
    near = near_rows(problem.values, extension.pair_extents(measure, n), NEAR_ROWS)
    columns.add(cheapest_groups(base, extension.base_extent, problem.values, measure,
                                near=near))
    lp = IncrementalMaster(master())
    best, value, rounds, converged = -math.inf, math.inf, 0, False
    last: Relaxation | None = None
    theta = -math.inf  # set from the first LP: its duals are degenerate, so early rounds
    # only look for groups far below 0 (millions of groups price below 0 there)
    while time.perf_counter() < deadline:
        # GLOP takes whole milliseconds: no deadline is a day
        relaxed = lp.relax(master(), min(deadline - time.perf_counter(), 86_400.0))
        if relaxed is None:
            break
        last = relaxed
        value = float(relaxed.y.sum())  # the LP's value (its (a) row is slack)
        if theta == -math.inf:
            theta = -EARLY_SHARE * value / n
        found, rc, least = extension.price(
            columns, relaxed, theta, deadline=deadline,
            max_partials=EARLY_PARTIALS if theta < 0 else MAX_PARTIALS)
        rounds += 1
        complete = not np.isneginf(least).any()
        if complete:  # per anchor the least reduced cost, or above theta; a cover
            # weighs n / m groups in all (least_of_solution)
            found_bound = value + least_of_solution(np.where(
                np.isfinite(least), np.minimum(least, 0.0), min(theta, 0.0)), n / m)
            if found_bound > best and report is not None:
                report(SubsetBound(found_bound, value, False, rounds, len(columns.cost),
                                   time.perf_counter() - started, m))
            best = max(best, found_bound)
        negative = rc < -1e-9 * max(1.0, abs(value))
        if theta == 0.0 and complete and not negative.any():
            converged, best = True, max(best, value)
            break
        if not negative.any():
            theta = 0.0
        elif negative.sum() < per_round:  # few far below 0: look closer to 0
            theta = theta / SHRINK if theta < -1e-6 * max(1.0, abs(value)) / n else 0.0
        columns.add(_chosen(found[negative], rc[negative], per_round)[:, :m])
    return SubsetBound(best, value, converged, rounds, len(columns.cost),
                       time.perf_counter() - started, m, _pool(columns, last, m),
                       np.asarray(last.y, dtype=np.float64) if last is not None else
                       np.zeros(0), near)


def _pool(columns: Columns, relaxed: Relaxation | None, m: int) -> np.ndarray:
    """The LP's support and each row's POOL_PER_ROW groups of least reduced cost."""
    if relaxed is None or not len(relaxed.x):
        return np.zeros((0, m), dtype=np.int64)
    count = len(relaxed.x)
    members = columns.members[:count, :m]
    rc = reduced_costs(members, columns.cost[:count], np.zeros(count), relaxed.y, 0.0)
    keep = np.zeros(count, dtype=bool)
    keep[relaxed.x > 1e-9] = True
    keep[cheapest_per_row(members, rc, np.arange(count), POOL_PER_ROW)] = True
    return np.asarray(members[keep], dtype=np.int64)


def cheapest_groups(base: np.ndarray, base_extent: np.ndarray, values: np.ndarray,
                    measure: Extent, subsets: int = START_SUBSETS,
                    extensions: int = START_EXTENSIONS, near: np.ndarray | None = None
                    ) -> np.ndarray:
    """Groups of ``k + 1`` rows (``base``: ``(B, k)`` subsets of distinct values, rows
    ascending): each row's ``subsets`` cheapest subsets of ``base``, each joined by its
    ``extensions`` cheapest rows of another value, rows ascending, without repeats. Where
    the chosen subsets times the rows exceed JOIN_CELLS, a subset's extensions are the
    cheapest among its members' NEAR_ROWS nearest rows of another value (``near``, from
    :func:`near_rows`; computed here from the measure's pair extents when not given)
    instead of among all rows.

    From the incumbent's groups alone, the LP's first duals are degenerate and its first
    rounds price hundreds of thousands of groups without completing (200 Adult rows at
    m = 4: LP 155.4 for four rounds, the first complete round after 3 s, converged at
    5.4 s). Each row's cheap groups start it near its value (132.7) and it converged at
    2.6 s. On 1,000 rows at m = 3 the join with every row took 2.2 s of the first round's
    4.4 s (benchmarks/RESULTS.md, session 20)."""
    join = getattr(measure, "joined", None)  # the vectorized extents offer it
    if not len(base) or join is None:
        return np.zeros((0, base.shape[1] + 1), dtype=np.int64)
    n, k = len(values), base.shape[1]
    extensions = min(extensions, n - k)
    if extensions <= 0:
        return np.zeros((0, k + 1), dtype=np.int64)
    by_extent = np.argsort(base_extent, kind="stable")
    rows = base[by_extent].ravel()
    # stable by row within the extent order: each row's subsets, cheapest first
    order = np.argsort(rows.astype(np.int16 if n < 2**15 else np.int64), kind="stable")
    ranked = rows[order]
    rank = np.arange(len(order)) - np.searchsorted(ranked, ranked, side="left")
    chosen = base[by_extent[np.unique(order[rank < subsets] // k)]]
    pairwise = getattr(measure, "pairwise", None)
    if len(chosen) * n > JOIN_CELLS and (near is not None or pairwise is not None):
        if near is None:
            near = near_rows(values, np.asarray(pairwise(np.arange(n), np.arange(n)),  # type: ignore[misc]
                                                dtype=np.float64), NEAR_ROWS)
        candidates = near_extensions(chosen, values, near)
        members = np.hstack([np.repeat(chosen, candidates.shape[1], axis=0),
                             candidates.reshape(-1, 1)])
        joined = np.asarray(measure.batch(np.maximum(members, 0)),  # type: ignore[attr-defined]
                            dtype=np.float64).reshape(candidates.shape).T  # (k·NEAR_ROWS, C)
        joined[candidates.T < 0] = np.inf
        extensions = min(extensions, len(joined))
        best = np.argpartition(joined, extensions - 1, axis=0)[:extensions]
        added = np.take_along_axis(candidates.T, best, axis=0)  # (extensions, C)
    else:
        joined = np.asarray(join(chosen, np.arange(n)), dtype=np.float64)
        taken = (values[:, None, None] == values[chosen][None, :, :]).any(axis=2)
        joined[taken] = np.inf  # a row of a value the subset holds (itself included)
        best = np.argpartition(joined, extensions - 1, axis=0)[:extensions]  # (extensions, C)
        added = best
    fits = np.isfinite(np.take_along_axis(joined, best, axis=0)).T.ravel()
    groups = np.hstack([np.repeat(chosen, extensions, axis=0), added.T.reshape(-1, 1)])[fits]
    return np.unique(np.sort(groups, axis=1), axis=0).astype(np.int64)


def near_rows(values: np.ndarray, pairs: np.ndarray, count: int) -> np.ndarray:
    """Per row, its ``count`` nearest rows of another value by ``pairs``, the rows' pair
    extents, nearest first (``-1`` pads)."""
    n = len(values)
    near = np.full((n, count), -1, dtype=np.int64)
    take = min(count, n - 1)
    if take <= 0:
        return near
    pair = np.where(values[:, None] == values[None, :], np.inf, pairs)  # the row itself too
    chosen = np.argpartition(pair, take - 1, axis=1)[:, :take]
    chosen = np.take_along_axis(chosen, np.argsort(np.take_along_axis(pair, chosen, axis=1),
                                                   axis=1, kind="stable"), axis=1)
    near[:, :take] = np.where(np.isfinite(np.take_along_axis(pair, chosen, axis=1)), chosen, -1)
    return near


def near_extensions(groups: np.ndarray, values: np.ndarray, near: np.ndarray) -> np.ndarray:
    """Per group of ``groups`` (``(C, k)`` rows), the rows that may extend it: its members'
    rows of ``near`` (:func:`near_rows`) of a value it does not hold, each once; ``(C, k ×
    near columns)``, ``-1`` elsewhere."""
    candidates = np.sort(near[groups].reshape(len(groups), -1), axis=1)
    candidates[:, 1:][candidates[:, 1:] == candidates[:, :-1]] = -1  # near two members
    held = (values[candidates][:, :, None] == values[groups][:, None, :]).any(axis=2)
    candidates[held] = -1
    return candidates


def _chosen(found: np.ndarray, rc: np.ndarray, per_round: int) -> np.ndarray:
    """The ``per_round`` groups of least reduced cost and each anchor's PER_ANCHOR least:
    from degenerate duals the least ones crowd on a few rows and the LP does not move."""
    order = np.lexsort((rc, found[:, 0]))
    anchor = found[order, 0]
    rank = np.arange(len(order)) - np.searchsorted(anchor, anchor, side="left")
    keep = np.zeros(len(found), dtype=bool)
    keep[order[rank < PER_ANCHOR]] = True
    keep[np.argsort(rc, kind="stable")[:per_round]] = True
    return found[keep]
