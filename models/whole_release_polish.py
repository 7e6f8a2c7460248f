"""A better start for the whole-release model (:func:`polished_start`): a release without
old rows has its groups regrouped freely by the local search of
:mod:`republish.models.unique_group_moves`, a release with old rows gets slot trades.

The whole-release model partitions such a release (a first release, m-invariance paper,
Xiao & Tao, SIGMOD 2007, §4) into m-unique groups of any values; its column generation
needs time to find good groups, and within a 1 s budget it mostly returns its start. The
relocate and swap moves, iterated with random kicks, find far cheaper partitions in a
fraction of a second (200 Adult rows, first release, ``benchmarks/RESULTS.md``), and a
cheaper start leaves reduced-cost fixing a smaller gap to close. Nothing is proven here.
"""

from __future__ import annotations

import dataclasses
import math
import time
from fractions import Fraction

import numpy as np

from republish.models.unique_group_moves import improve_unique_groups
from republish.models.whole_release_answer import Candidate, release_objectives
from republish.models.whole_release_counts import BoxExtent, Extent
from republish.models.whole_release_extent_tables import TabulatedExtent, tabulated
from republish.models.whole_release_problem import (
    WholeReleaseProblem,
    new_group_without_counterfeits,
)
from republish.models.whole_release_slots import trade_slots

__all__ = ["POLISH_SHARE", "polished_start", "regroup_new_groups", "regroup_new_release",
           "unique_search_seconds"]

#: Releases with old rows that the model solves: at most this share of the budget polishes
#: the start by slot trades (:mod:`republish.models.whole_release_slots`), which stop
#: after POLISH_PATIENCE assignments without a gain (a release without old rows: the free
#: regrouping takes more, :func:`unique_search_seconds`).
POLISH_SHARE, POLISH_PATIENCE = 0.05, 200
#: Share of a release's budget (at most UNIQUE_SECONDS) the search may take when the
#: release has no old rows. First release of 200 Adult rows, 10 s: share 0.1 gave 66.5
#: (m = 3) and 118.5 (m = 4), 0.25 gave 67.0 and 111.9 (column generation does not
#: converge at m = 4 and keeps the start).
UNIQUE_SHARE, UNIQUE_SECONDS = 0.2, 5.0
#: Above this many rows the model's column generation barely starts within seconds, while
#: the search keeps gaining: it then takes this share of the budget, without the cap.
#: Adult first releases, m = 3, 10 s, share 0.2 -> 0.7: 500 rows 130.3 -> 123.8, 1,000
#: rows 206.9 -> 184.1, 2,000 rows 370.1 -> 335.9 (no column generation round either way).
UNIQUE_LARGE_ROWS, UNIQUE_LARGE_SHARE = 400, 0.7
#: Kicks of the iterated search at most (it stops at its deadline first on 200 rows).
MAX_KICKS = 10_000


#: Where the model prices from tables (a release whose smallest groups fit in a table,
#: models/whole_release_tables.py), column generation converges on larger releases given
#: this many seconds per pair of rows (its table above 400 rows holds the pairs, m = 2),
#: and the search keeps UNIQUE_SHARE. Before the ladder of restricted MIPs
#: (models/whole_release_fixing.py, session 17) the model only gained from 45 s on (Adult
#: first release, 2,000 rows, m = 2, share 0.7 -> 0.2: 60 s gap 61.4 -> 5.5 %, 20 s (b)
#: 127.3 -> 145.5). With it (share 0.7 -> 0.2, samples 1-3): 2,000 rows at 20 s gaps 4.0,
#: 3.6, 6.2 % (a second run 3.2, 5.2, 10.4 %), where the search alone left 45-54 %; at
#: 10 s 38 %, 8 %, 39 % (the ladder has no time on two), so 2,000 rows need 15 s; 1,000
#: rows at 5 s 3.6, 2.8, 2.5 %, where the search alone left 25-28 %.
#: (The step's model gets the budget less the warm start.)
TABLED_SECONDS_PER_PAIR = 7.5e-6


def unique_search_seconds(rows: int, time_limit: float, priced_from_tables: bool = False
                          ) -> float:
    """The seconds of a ``time_limit`` budget the search may take on a release of ``rows``
    rows without old rows (``priced_from_tables``: the model's column generation prices
    from tables)."""
    if rows > UNIQUE_LARGE_ROWS and priced_from_tables and \
            time_limit >= TABLED_SECONDS_PER_PAIR * rows * (rows - 1) / 2:
        return UNIQUE_SHARE * time_limit
    if rows > UNIQUE_LARGE_ROWS:
        return UNIQUE_LARGE_SHARE * time_limit
    return min(UNIQUE_SHARE * time_limit, UNIQUE_SECONDS)


def regroup_new_release(problem: WholeReleaseProblem, groups: list[np.ndarray],
                        measure: Extent, *, deadline: float, seed: int
                        ) -> list[np.ndarray] | None:
    """``groups`` regrouped by the local search, or None when it does not apply (old rows,
    a group with counterfeits, an extent that is not a box sum) or gains nothing. The
    groups hold the same rows (the deferred rows stay out), so (a) is unchanged."""
    if problem.has_old_rows or len(groups) < 2:
        return None
    values = problem.values
    if any(len(g) < problem.m or len(np.unique(values[g])) != len(g) for g in groups):
        return None  # a group lacking values holds counterfeits: its slots are not free
    table = tabulated(measure)
    if isinstance(table, TabulatedExtent):
        points, lengths = table.points, table.lengths
    elif isinstance(table, BoxExtent):
        points, lengths = table.points, None
    else:
        return None
    found = improve_unique_groups(points, values, groups, problem.m, lengths=lengths,
                                  deadline=deadline, seed=seed, max_kicks=MAX_KICKS)
    if not found.cost_after < found.cost_before - 1e-9 * max(1.0, found.cost_before) or \
            math.isnan(found.cost_after):
        return None
    return list(found.groups)


def regroup_new_groups(problem: WholeReleaseProblem, groups: list[np.ndarray],
                       measure: Extent, *, deadline: float, seed: int
                       ) -> list[np.ndarray] | None:
    """``groups`` with their groups of new rows only (no old row, no counterfeit) regrouped
    freely among themselves by :func:`regroup_new_release`, the others kept; None when
    fewer than two such groups or nothing is gained.

    Those rows take new signatures (m-invariance paper, Xiao & Tao, SIGMOD 2007, §4.1:
    a new row's signature is its group's), so any m-unique partition of them is a valid
    part of the release, and (a) is unchanged. The release step's warm starts form these
    groups as Assign does, by value counts alone; on release 2 of the 20,000-row Adult
    series at m = 3 its 547 groups of new rows cost 1,675 of 15,652, the free regrouping
    of the same 1,641 rows 388."""
    fresh = [k for k, g in enumerate(groups) if new_group_without_counterfeits(problem, g)]
    table = tabulated(measure)
    if len(fresh) < 2 or not isinstance(table, TabulatedExtent | BoxExtent):
        return None  # not a box sum: the search does not apply
    rows = np.concatenate([groups[k] for k in fresh])
    local = np.full(len(problem.values), -1, dtype=np.int64)
    local[rows] = np.arange(len(rows))
    sub = dataclasses.replace(problem, points=problem.points[rows],
                              values=problem.values[rows],
                              bucket=np.full(len(rows), -1, dtype=problem.bucket.dtype),
                              signatures=(), box_lengths=None)
    restricted: Extent = TabulatedExtent(table.points[rows], table.tables) if isinstance(
        table, TabulatedExtent) else BoxExtent(table.points[rows])
    regrouped = regroup_new_release(sub, [local[groups[k]] for k in fresh], restricted,
                                    deadline=deadline, seed=seed)
    if regrouped is None:
        return None
    moved = set(fresh)
    kept = [g for k, g in enumerate(groups) if k not in moved]
    return kept + [rows[g] for g in regrouped]


def polished_start(problem: WholeReleaseProblem, incumbent: Candidate,
                   candidates: list[Candidate], weight: Fraction, measure: Extent, *,
                   deadline: float, seed: int) -> Candidate:
    """The incumbent regrouped freely when the release has no old rows
    (:func:`regroup_new_release`), else after slot trades
    (:mod:`republish.models.whole_release_slots`): a cheaper start gives the model a
    smaller gap to close by reduced-cost fixing. A cheaper release joins ``candidates``;
    the best of them is returned."""
    if len(incumbent.groups) < 2 or time.perf_counter() >= deadline:
        return incumbent
    regrouped = regroup_new_release(problem, list(incumbent.groups), measure,
                                    deadline=deadline, seed=seed)
    if regrouped is not None:
        groups = regrouped
    else:
        traded = trade_slots(problem, incumbent.groups, deadline=deadline, seed=seed,
                             extent=measure, patience=POLISH_PATIENCE)
        if not traded.improved:
            return incumbent
        groups = list(traded.groups)
    a, b = release_objectives(problem, groups, len(incumbent.deferred), weight, measure)
    polished = Candidate(a, b, groups, incumbent.deferred, "model")
    candidates.append(polished)
    return min(candidates, key=lambda c: (c.a, c.b))
