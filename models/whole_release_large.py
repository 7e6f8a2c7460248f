"""A release step too large for the whole-release set-partitioning model: the best start
improved by slot trades, bucket rebuilds and large-neighbourhood search, with the row,
pair and cycle-cover lower bounds on (b) (m-invariance paper, Xiao & Tao, SIGMOD 2007,
§4.3; :mod:`republish.models.whole_release` for the objective and certificates).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from republish.models.whole_release_answer import (
    Candidate,
    certified_solution,
    release_objectives,
)
from republish.models.whole_release_bound import CYCLE_COVER_ROWS, cycle_cover_bound
from republish.models.whole_release_bound_process import bound_beside
from republish.models.whole_release_counts import Extent
from republish.models.whole_release_pair_bound import lower_bound_b
from republish.models.whole_release_polish import regroup_new_groups
from republish.models.whole_release_problem import (
    WholeReleaseProblem,
    WholeReleaseSolution,
    group_signature,
    new_group_without_counterfeits,
    release_problems,
)
from republish.models.whole_release_rebuild import rebuild_buckets
from republish.models.whole_release_slots import trade_slots
from republish.objectives import ReleaseCost

__all__ = ["bound_share", "eligibility_slack", "solve_by_neighbourhoods"]

#: The neighbourhoods only regroup rows within their signature, so the next release's
#: buckets are those of the start. Letting new rows change signature gained far more (b)
#: on 20,000 Adult rows in 60 s (-20 % at m = 3, -18 % at m = 4) but the chain then spent
#: more counterfeits in the next releases (4 vs 0 at m = 4, 378 vs 98 at m = 7 over 3
#: releases): (a) comes first, so signatures are kept (benchmarks/RESULTS.md).
KEEP_SIGNATURES = True
#: Share of a large release's search budget given to slot trades
#: (:mod:`republish.models.whole_release_slots`; they stop early at a local optimum) before
#: the buckets are rebuilt (:mod:`republish.models.whole_release_rebuild`) and traded
#: again, the rest to the neighbourhoods (20,000 Adult rows, 10 s, release 1: slot trades
#: alone -12.0 % (m = 3), -9.2 % (m = 7); half the budget each, with the neighbourhoods,
#: -11.0 %, -7.4 %). The buckets are rebuilt early, and the trades go on from the rebuilt
#: ones (a first release's buckets are its groups of one signature; its release 1 at m = 3,
#: 60 s: 15,190 with the trades alone, 15,059 rebuilt after 0.15, in 9.4 s). Release 4 of
#: the m = 3 chain at 60 s cost 13,373 with the trades alone,
#: 13,246 / 13,215 / 13,186 / 13,161 / 13,246 with the rebuild after 0.5 / 0.3 / 0.15 /
#: 0.05 / 0 of the search (benchmarks/RESULTS.md, session 14). The rebuild takes about
#: REBUILD_SECONDS_PER_ROW per old row (4.96 s for the 18,000 of that release); it runs
#: early only where the search has REBUILD_ROOM times that, so that the trades get most of
#: the search after it: with the 10 s budget (about 5 s of search) the early rebuild left
#: the trades nothing on the largest buckets, and (b) rose 9 % (m = 3, release 2).
#: The estimate is linear in the rows, measured at one size (a bucket's assignments grow
#: faster than its rows), so an early rebuild stops at REBUILD_CAP of the search left.
SLOT_SHARE = 0.15
REBUILD_SECONDS_PER_ROW, REBUILD_ROOM, REBUILD_CAP = 2.8e-4, 4.0, 0.5
#: Shares of a large release's budget its (b) bound may take before the search starts,
#: counted from when the bound starts: the pair bound's uniform weights up to
#: UNIFORM_SHARE, its weights' search up to BOUND_SHARE. 20,000 Adult rows at 10 s need
#: about 0.3-0.4 s for the row bound and 3.2-3.7 s for the pair bound's 32 transportation
#: problems (m = 3), which 0.35 of the budget from the step's start no longer left (gaps
#: 35-51 % against 34 % in session 9), nor always 0.4 from the bound's start.
UNIFORM_SHARE, BOUND_SHARE = 0.5, 0.4
#: Above LARGE_BOUND_ROWS rows every bound before the search (this one, and the bound
#: within a first release's signatures) takes at most LARGE_BOUND_SHARE of the budget. There
#: the row bound is its capacity part, reached within a second (200,000 census rows, m =
#: 10: 1,484.9 after 1 s, 1,486.2 after 10 s), the pair bound does not finish (its 45 pairs
#: of values took over 120 s, benchmarks/RESULTS.md), and the shares above left the slot
#: trades 2-4 s of a 10 s budget.
LARGE_BOUND_ROWS, LARGE_BOUND_SHARE = 50_000, 0.1
#: Share of the search budget at its end in which the groups of new rows only are
#: regrouped freely (:func:`~republish.models.whole_release_polish.regroup_new_groups`):
#: on 20,000 Adult rows, 60 s, (b) against the heuristic -22.9 -> -30.6 % at m = 3 and
#: -18.8 -> -23.6 % at m = 4. Their new signatures are all different, so the next
#: releases hold many one-group buckets, which cannot absorb deletions. Where values are
#: scarce that costs counterfeits later: at m = 7 one regrouped release (release 3 of 6)
#: raised the chain's counterfeits from 973 to 1,057, and at m = 6 (10 s) a later release
#: needed 6 in two runs (none without). So the regrouping runs only where the release needs
#: no counterfeit and its value counts leave an eligibility slack ``1 - m·max_v n_v / n``
#: of at least NEW_GROUPS_MIN_SLACK (Adult's occupation: 0.33 at m = 5, whose chains stayed
#: without counterfeits at 10 and 60 s; 0.19 at m = 6; 0.06 at m = 7).
NEW_GROUPS_SHARE, NEW_GROUPS_MIN_SLACK = 0.1, 0.3
#: The bound beside the search (``workers >= 2``) starts with the relaxations per QI
#: (:mod:`republish.models.whole_release_separable_bound`) for up to SEPARABLE_LARGE_SHARE
#: of its time, then the row and pair bounds for the rest, where its time gives it
#: SEPARABLE_LARGE_SECONDS_PER_ROW a row; the QIs of few values come first and each one
#: done counts at once. On 20,000 Adult rows at m = 3 (release 4, session 17's capture)
#: sex, education and native-country sum to 10,473 after 1.9 s, above the pair bound after
#: 10 s (10,287) and 39 s (10,614), and age brings 11,046 after 16 s; at m = 7 (release 2)
#: sex alone gives 10,858 after 0.2 s and three QIs 23,892 after 21 s, where the pair bound
#: reported 8,041 at 10 s. At 10 s (child's 9.5 s) the pair bound keeps the whole time:
#: there its time taken halved the pair bound's weights and lost as much as it gained
#: (20,000 rows, same machine, median gaps m = 3: 25.4 -> 25.5 %, m = 5: 45.6 -> 52.7 %,
#: m = 7: 60.6 -> 63.0 %); at 60 s it raised all but one bound (median gaps m = 3-7:
#: 21.8 / 19.1 / 18.9 / 18.5 / 40.7 -> 18.9 / 17.7 / 14.1 / 12.9 / 16.8 %). Hence 1.5 ms a
#: row: 30 s of the child's time at 20,000 rows.
SEPARABLE_LARGE_SHARE, SEPARABLE_LARGE_SECONDS_PER_ROW = 0.6, 1.5e-3
#: Share of the budget (at most 1 s) by which a bound computed beside the search
#: (``workers >= 2``) stops before the search does: on 20,000 Adult rows at 10 s, a child
#: given the search's deadline answered up to 0.7 s after it (m = 3).
BESIDE_MARGIN = 0.05


def solve_by_neighbourhoods(problem: WholeReleaseProblem, incumbent: Candidate,
                       candidates: list[Candidate], a_star: Fraction | None, bound_a: float,
                       weight: Fraction, measure: Extent, started: float, time_limit: float,
                       seed: int, workers: int = 1) -> WholeReleaseSolution:
    """A release too large for the set-partitioning model: the best start improved by
    large-neighbourhood search (:mod:`republish.models.whole_release_neighbourhoods`) for
    the rest of the budget; (b) keeps the cycle-cover bound where it is cheap. With
    ``workers >= 2`` the row and pair bounds run in a second process for the whole budget
    (:mod:`republish.models.whole_release_bound_process`) and the search gets all of it."""
    from republish.models.whole_release_neighbourhoods import improve_by_neighbourhoods
    cycle_share = 0.1 if len(problem.values) <= CYCLE_COVER_ROWS else 0.0
    deadline = started + time_limit * (1 - cycle_share)
    grace = min(1.0, 0.1 * time_limit)  # what the bounds may take past the budget
    has_old = problem.has_old_rows
    # the row and pair bounds depend on the problem and A* only: beside the search where a
    # second process may run (stopped a little early, since its last weights' round may
    # overrun), else before the search takes the time (the pair bound's transportation
    # problems take ~3 s at 20,000 Adult rows)
    beside_end = deadline - min(BESIDE_MARGIN * time_limit, 1.0)
    cost = getattr(measure, "cost", None)  # the QIs of the perimeter or NCP
    pending = bound_beside(problem, measure, incumbent.a, weight, deadline=beside_end,
                           weights_deadline=beside_end, groups=incumbent.groups, cost=cost,
                           separable_deadline=_separable_deadline(problem, cost, beside_end)) \
        if a_star is not None and workers >= 2 and has_old else None
    now = time.perf_counter()
    rows_bound = lower_bound_b(problem, measure, incumbent.a, weight,
                               deadline=now + bound_share(problem, UNIFORM_SHARE) * time_limit,
                               weights_deadline=now + bound_share(problem, BOUND_SHARE)
                               * time_limit,
                               groups=incumbent.groups) \
        if a_star is not None and pending is None else 0.0
    now = time.perf_counter()
    # the last share regroups the groups of new rows only (not in a first release, whose
    # buckets the trades below improve far more: they trade within signatures)
    search_end = deadline - NEW_GROUPS_SHARE * (deadline - now) if \
        _regroups_new_groups(problem, a_star) else deadline
    share = _trade_share(problem, search_end - now)
    early = share < 1.0
    slots = trade_slots(problem, incumbent.groups, deadline=now + share * (search_end - now),
                        seed=seed, extent=measure)
    # the trades stop in a local optimum (or, where there is room, at SLOT_SHARE): the
    # buckets restart from a fresh construction, kept where it beats the traded grouping,
    # and the trades go on from there
    now = time.perf_counter()
    buckets = problem if has_old else _signature_buckets(problem, slots.groups)
    # an early rebuild leaves the trades at least half of what is left, should it overrun
    rebuilt = rebuild_buckets(buckets, slots.groups, extent=measure, deadline=now + REBUILD_CAP
                              * (search_end - now) if early else search_end)
    if rebuilt.rebuilt or early:  # trades stopped early go on even if none was rebuilt
        again = trade_slots(problem, rebuilt.groups, deadline=search_end, seed=seed + 1,
                            extent=measure)
        slots = dataclasses.replace(again, solved=slots.solved + again.solved,
                                    improved=slots.improved + again.improved,
                                    gain=slots.gain + rebuilt.gain + again.gain)
    search = improve_by_neighbourhoods(problem, slots.groups, deadline=search_end,
                                       seed=seed, extent=measure,
                                       keep_signatures=KEEP_SIGNATURES)
    groups = list(search.groups)
    regrouped = regroup_new_groups(problem, groups, measure, deadline=deadline, seed=seed) \
        if search_end < deadline else None
    if regrouped is not None:
        groups = regrouped
    a, b = release_objectives(problem, groups, len(incumbent.deferred), weight, measure)
    if search.improved or slots.improved or rebuilt.rebuilt or regrouped is not None:
        candidates.append(Candidate(a, b, groups, incumbent.deferred, "model"))
    best = min(candidates, key=lambda c: (c.a, c.b))
    a_done = a_star is not None and best.a == a_star
    status_a = "OPTIMAL" if a_done else "FEASIBLE" if best.source == "model" else "HEURISTIC"
    status_b = "FEASIBLE" if best.source == "model" else "HEURISTIC"
    if pending is not None:
        beside = pending.collect(started + time_limit + grace)
        rows_bound = beside if beside is not None else lower_bound_b(
            problem, measure, incumbent.a, weight, deadline=time.perf_counter() + grace,
            groups=incumbent.groups)
    bound_b = rows_bound if a_done else 0.0
    if cycle_share and a_done:
        bound_b = max(bound_b, cycle_cover_bound(problem, measure, float(incumbent.a), weight,
                                                 deadline=started + time_limit))
    detail = (("groups of new rows regrouped; " if regrouped is not None else "") +
              f"rebuild: {rebuilt.rebuilt} of {rebuilt.tried} buckets improved; "
              f"slot trades: {slots.solved} assignments solved, {slots.improved} improved; "
              f"large-neighbourhood search: {search.solved} neighbourhoods of "
              f"{search.groups_per_neighbourhood} groups solved, {search.improved} improved; "
              f"answer from the {best.source}")
    answer = certified_solution(problem, best, (status_a, status_b), (bound_a, bound_b),
                                started, 0, detail)
    broken = release_problems(problem, answer.groups, answer.deferred)
    if broken:
        raise RuntimeError(f"large-neighbourhood search produced an invalid release: {broken}")
    return answer


def _separable_deadline(problem: WholeReleaseProblem, cost: object, end: float
                        ) -> float | None:
    """Until when the bound beside the search runs the relaxations per QI before the pair
    bound (SEPARABLE_LARGE_SHARE), or None where it has less than
    SEPARABLE_LARGE_SECONDS_PER_ROW a row or ``cost`` is no perimeter or NCP to split by
    QI."""
    now = time.perf_counter()
    if not isinstance(cost, ReleaseCost) or \
            end - now < SEPARABLE_LARGE_SECONDS_PER_ROW * len(problem.values):
        return None
    return now + SEPARABLE_LARGE_SHARE * (end - now)


def _regroups_new_groups(problem: WholeReleaseProblem, a_star: Fraction | None) -> bool:
    """Whether the groups of new rows only are regrouped (NEW_GROUPS_SHARE): the release
    has old rows, needs no counterfeit or deferral, and its values leave an eligibility
    slack of at least NEW_GROUPS_MIN_SLACK."""
    if not problem.has_old_rows or a_star != 0 or not len(problem.values):
        return False
    return eligibility_slack(problem) >= NEW_GROUPS_MIN_SLACK


def bound_share(problem: WholeReleaseProblem, share: float) -> float:
    """``share`` of the budget for a bound computed before the search, at most
    LARGE_BOUND_SHARE above LARGE_BOUND_ROWS rows."""
    return share if len(problem.values) <= LARGE_BOUND_ROWS else min(share, LARGE_BOUND_SHARE)


def eligibility_slack(problem: WholeReleaseProblem) -> float:
    """``1 - m·max_v n_v / n`` over the release's rows (non-empty): how far its most
    frequent value is from making it not m-eligible (0 there)."""
    values = problem.values
    return 1.0 - problem.m * int(np.bincount(values).max()) / len(values)


def _trade_share(problem: WholeReleaseProblem, search_seconds: float) -> float:
    """The share of the search the first slot trades take before the buckets are rebuilt:
    SLOT_SHARE where the search has REBUILD_ROOM times the rebuild's expected time (a first
    release's rows all count: its groups of one signature are rebuilt as buckets), else 1
    (the rebuild then runs only if the trades stall)."""
    old_rows = int((problem.bucket >= 0).sum())
    rows = old_rows if old_rows else len(problem.values)
    room = REBUILD_ROOM * REBUILD_SECONDS_PER_ROW * rows
    return SLOT_SHARE if rows and search_seconds >= room else 1.0


def _signature_buckets(problem: WholeReleaseProblem,
                       groups: Sequence[np.ndarray]) -> WholeReleaseProblem:
    """A first release's groups of one signature as the buckets of a copy of ``problem``,
    for :func:`~republish.models.whole_release_rebuild.rebuild_buckets`: it keeps every
    bucket's rows and gives each group one row per value of the bucket's signature, so
    every group keeps its signature. Groups with counterfeits stay out (a rebuild could
    move a counterfeit to another value, and the padding would then change signatures)."""
    bucket = np.full(len(problem.values), -1, dtype=np.int64)
    keys: dict[frozenset[int], int] = {}
    for group in groups:
        rows = np.asarray(group, dtype=np.int64)
        if new_group_without_counterfeits(problem, rows):
            bucket[rows] = keys.setdefault(group_signature(problem, rows), len(keys))
    return dataclasses.replace(problem, bucket=bucket, signatures=tuple(keys))
