"""A first release from the m-row relaxation's groups: SCIP over pools of each row's
cheapest groups by reduced cost.

The m-row relaxation of a release without old rows
(:mod:`republish.models.whole_release_subset_bound`) ends with an LP over groups of exactly
``m`` rows whose value is close to the optimum of the release (m-invariance paper, Xiao &
Tao, SIGMOD 2007, §4: a first release is a partition into m-unique groups; its cost (b)
the perimeter of §4.3). Its groups, each of them extended by a nearby row of another value
(a partition of ``n`` rows needs groups of ``m + 1`` rows where ``m`` does not divide
``n``), and the incumbent's groups form the columns of a set-partitioning model solved
over growing pools by :func:`~republish.models.whole_release_fixing.restricted_ladder`
(each row's 1, 2, 4, ... columns of least reduced cost under the relaxation's duals of
each size, the incumbent among them): a restricted master heuristic (Joncour, Michel,
Sadykov, Sverdlov & Vanderbeck, *Column generation based primal heuristics*, ENDM 36,
2010, §2). Not in the paper.

Where the model prices its columns from no table (401-2,000 rows at m = 3) its column
generation does not start within seconds, and the free regrouping
(:mod:`republish.models.unique_group_moves`) ended 15-20 % above the relaxation. On
1,000 Adult rows at m = 3 (sample 1: relaxation 148.40, a 3 s regrouping 180.22) the
pools of 1,420 / 2,548 / 4,605 / 8,337 columns gave 180.10 / 180.08 / 160.62 / 153.42 in
0.03 / 0.10 / 1.3 / 12.1 s; on 2,000 rows (248.59, 357.67) 10,232 columns gave 310.61 in
18 s (``benchmarks/RESULTS.md``, session 20).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np

from republish.models.whole_release_answer import Candidate, release_objectives
from republish.models.whole_release_bound import Relaxation
from republish.models.whole_release_columns import Columns
from republish.models.whole_release_counts import Extent, ReleaseCounts
from republish.models.whole_release_fixing import restricted_ladder
from republish.models.whole_release_problem import WholeReleaseProblem
from republish.models.whole_release_subset_bound import SubsetBound, near_extensions

__all__ = ["EXTENSION_ROWS", "ladder_candidate", "ladder_from_relaxation"]

#: Each of a group's rows offers this many nearest rows of another value to extend it by.
EXTENSION_ROWS = 3


def ladder_from_relaxation(problem: WholeReleaseProblem, measure: Extent,
                           relaxation: SubsetBound, groups: list[np.ndarray], *,
                           deadline: float, seed: int) -> list[np.ndarray] | None:
    """The cheapest partition SCIP finds by ``deadline`` (``time.perf_counter()``) over the
    relaxation's pool, each pool group extended by one of its members' EXTENSION_ROWS
    nearest rows (``relaxation.near``), and the incumbent ``groups`` (a partition of every
    row into m-unique groups); None when the relaxation was not over m-row groups or has
    no duals or nearest rows, the extent has no ``pairwise`` (it is not vectorized),
    ``groups`` do not partition every row into groups of ``m`` or more rows, or nothing
    cheaper than ``groups`` was found."""
    m, values = problem.m, problem.values
    n = len(values)
    if relaxation.size != m or len(relaxation.duals) != n or len(relaxation.near) != n or \
            getattr(measure, "pairwise", None) is None or not len(relaxation.pool) or \
            not groups or sum(len(g) for g in groups) != n or \
            any(len(g) < m for g in groups):
        return None  # the start must be a partition of every row (no deferral, no padding)
    pool = np.asarray(relaxation.pool, dtype=np.int64)
    near = near_extensions(pool, values, relaxation.near[:, :EXTENSION_ROWS])
    grown = np.hstack([np.repeat(pool, near.shape[1], axis=0), near.reshape(-1, 1)])
    fresh = near.ravel() >= 0
    width = max(m + 1, max(len(g) for g in groups))
    # every row covered exactly once: no deferral, as in the relaxation
    covered = dataclasses.replace(problem, allow_deferrals=False)
    columns = Columns(covered, ReleaseCounts.of(covered), measure, Fraction(1), 0, width)
    columns.add(pool)
    columns.add(np.unique(np.sort(grown[fresh], axis=1), axis=0))
    best = columns.add(np.array([np.pad(np.sort(g), (0, width - len(g)), constant_values=-1)
                                 for g in groups])).tolist()
    best_cost = float(columns.cost[best].sum())
    duals = np.asarray(relaxation.duals, dtype=np.float64)
    relaxed = Relaxation(duals, 0.0, duals, np.zeros(0), np.zeros(len(columns.cost)),
                         relaxation.bound, relaxation.bound)
    chosen, cost, _ = restricted_ladder(columns, None, relaxed, best, best_cost,
                                        relaxation.bound, deadline=deadline, seed=seed)
    if not cost < best_cost - 1e-9 * max(1.0, best_cost):
        return None
    return [row[row >= 0] for row in columns.members[chosen]]


def ladder_candidate(problem: WholeReleaseProblem, table: Extent, subset: SubsetBound,
                     incumbent: Candidate, candidates: list[Candidate], weight: Fraction, *,
                     deadline: float, seed: int) -> Candidate:
    """The best of ``candidates`` once :func:`ladder_from_relaxation`'s release, if any,
    joins them (lexicographic (a), (b)); only from an incumbent whose (a) is 0."""
    if incumbent.a != 0 or len(incumbent.deferred):
        return incumbent
    found = ladder_from_relaxation(problem, table, subset, list(incumbent.groups),
                                   deadline=deadline, seed=seed)
    if found is None:
        return incumbent
    candidates.append(Candidate(*release_objectives(problem, found, 0, weight, table), found,
                                incumbent.deferred, "model"))
    return min(candidates, key=lambda c: (c.a, c.b))
