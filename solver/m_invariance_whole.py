"""The whole-release model inside the m-invariant release step, and the release's
certificate for the lexicographic objective of :mod:`republish.objectives`.

The decomposed pipeline of :mod:`republish.solver.m_invariance` (counts first, then the
grouping of each bucket) is a heuristic for the release objective: which new rows fill
which bucket changes the best grouping. :func:`solve_whole` hands its answer as the warm
start to :func:`republish.models.whole_release.solve_whole_release`, which decides every
row's group at once (m-invariance paper, §4.1-4.3 as one model) and proves (a) and (b)
where it can. Where the model does not run (``heuristic`` mode, or ``auto`` above
:data:`AUTO_WHOLE_ROWS` rows), :func:`bound_only` still bounds (b) with
:func:`republish.models.whole_release_bound.whole_release_bound` when time allows, so the
reported gap is the gap to the release's true optimum.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from republish.certificate import Certificate, Status, lexicographic
from republish.errors import ParameterError
from republish.heuristics.compact_groups import compact_groups
from republish.models.whole_release import (
    WHOLE_MODEL_ROWS,
    WholeReleaseProblem,
    WholeReleaseSolution,
    solve_whole_release,
)
from republish.models.whole_release_bound import whole_release_bound
from republish.models.whole_release_bound_process import bound_beside
from republish.models.whole_release_counts import rational_weight
from republish.models.whole_release_large import (
    BESIDE_MARGIN,
    NEW_GROUPS_MIN_SLACK,
    bound_share,
    eligibility_slack,
)
from republish.models.whole_release_pair_bound import lower_bound_b
from republish.objectives import OBJECTIVES, ReleaseCost, counts_name
from republish.parameters import Eligibility
from republish.solver.options import Deadline, SolveOptions
from republish.solver.signature_policy import (
    WITHIN_SHARE,
    local_signatures,
    same_signatures,
    signature_problem,
    value_sets,
)

__all__ = ["AUTO_FREE_ROWS", "AUTO_LOCAL_ROWS", "AUTO_SLOT_ROWS", "AUTO_SLOT_SECONDS_PER_ROW",
           "AUTO_WHOLE_ROWS", "BOUND_ROWS", "WHOLE_MODEL_ROWS", "Grouping", "Within",
           "auto_improves", "bound_only", "release_certificate", "solve_whole", "whole_problem"]

#: ``auto``: the whole-release model runs on releases of at most this many rows, as in
#: ``exact``. It was 400, and ``auto`` answered releases of 401-2,000 rows with the paper's
#: pipeline and its per-bucket exact steps in 0.1-4.5 s of a 10 s budget: 1,000 Adult rows,
#: first release, (b) 787 / 1,162 / 1,581 (m = 2 / 3 / 4) against the model's 68 / 181 /
#: 365; series of 1,000-2,000 rows 1-11 % below the heuristic, now 15-32 % (session 18).
AUTO_WHOLE_ROWS = WHOLE_MODEL_ROWS
#: ``auto`` under the default policy ``buckets``: a release without old rows is partitioned
#: freely up to this many rows, and above it regrouped keeping the paper's signatures and
#: their counts (``keep-signatures``). Free partitions of 1,000 Adult rows cost the next
#: three releases 16 / 64 / 108 counterfeits (m = 2 / 3 / 4) against the paper's 2 / 2 / 20;
#: within the buckets 3 / 2 / 16, with (b) still 15-28 % below the paper's over the series
#: (session 18). Keeping the signatures but not which rows share a bucket (session 21,
#: four releases of 1,000 rows, 10 s): 5 / 2 / 14 counterfeits against 3 / 2 / 18 within
#: the buckets, (b) -36 / -22 / -20 % against the heuristic instead of -28 / -16 / -15 %.
AUTO_FREE_ROWS = 400
#: ``auto`` under ``buckets``: from this many rows a first release takes a few dozen
#: signatures chosen by locality (``local-signatures``) instead of the paper's. Six
#: releases of 20,000 Adult rows (10 s): (b) -64 / -58 % against the heuristic at m = 3 /
#: 4 instead of -27 / -19 %, no counterfeit either way; four of 5,000 rows: -62 / -62 %
#: instead of -26 / -22 %, 8 / 6 counterfeits against 7 / 8. On 1,000 and 2,000 rows the
#: small buckets cost counterfeits (m = 3: 11 against 2 and 17 against 10; m = 4 on 2,000
#: rows: 92 against 19), so smaller first releases keep the paper's signatures. So do
#: releases whose values leave an eligibility slack ``1 - m·max_v n_v / n`` below
#: NEW_GROUPS_MIN_SLACK, as for the regrouping of new rows
#: (:mod:`republish.models.whole_release_large`): at 20,000 rows, m = 5 (slack 0.33) spent
#: no counterfeit in six releases ((b) -48 % instead of -20 %), m = 6 (0.19) spent 22
#: against none.
AUTO_LOCAL_ROWS = 5_000
#: ``auto``: releases of more than WHOLE_MODEL_ROWS rows are improved by the model's slot
#: trades and neighbourhoods (-14 % of (b) on 20,000 Adult rows in 10 s) instead of
#: grouping each bucket exactly (-0.2 %), up to AUTO_SLOT_ROWS rows, and above that where
#: the budget gives every row AUTO_SLOT_SECONDS_PER_ROW (:func:`auto_improves`): the step's
#: other parts and the search's set-up grow with the rows. A synthetic census, m = 10:
#: 200,000 rows, three releases, (b) -7.7 % against the paper's at 10 s (at most 10.5 s
#: wall), -24.5 % at 60 s; 1,000,000 rows in 60 s: -6.3 % (62 s wall), while in 20 s the
#: step ended at 33 s without a single trade (each bound's set-up alone took 6 s of its
#: 2 s share, and the compact groups of ``local-signatures`` 5 s).
AUTO_SLOT_ROWS = 50_000
AUTO_SLOT_SECONDS_PER_ROW = 5e-5
#: The (b) bound of releases the model does not solve: up to this many rows (the row
#: bound: about 1 s at 20,000 Adult rows; the cycle-cover bound only up to 5,000 rows,
#: where it used the rest of a 10 s budget and proved nothing).
BOUND_ROWS = 50_000
#: Seconds the row bound may run past the step's deadline when (a) is proven (measured:
#: <= 1.5 s wall, 0.6 s CPU at 20,000 Adult rows on a loaded machine).
ROW_BOUND_GRACE = 1.0
#: Less time than this (seconds) left: no model, no bound.
MIN_SECONDS = 0.05
#: Seconds per row the step needs after the model's search: the answer's checks and
#: objectives, then the release's build and verification (200,000 census rows at m = 10:
#: about 1.2 s, which overran a 10 s budget by as much).
AFTER_MODEL_SECONDS_PER_ROW = 6e-6


def auto_improves(rows: int, time_limit: float) -> bool:
    """Whether ``auto`` improves a release of ``rows`` rows (more than WHOLE_MODEL_ROWS)
    by the model's large-release search within ``time_limit`` seconds."""
    return rows <= AUTO_SLOT_ROWS or time_limit >= AUTO_SLOT_SECONDS_PER_ROW * rows


@dataclass(frozen=True, eq=False)
class Grouping:
    """A release in rows of ``T(n)``: each group's real rows and signature (value codes),
    each group's counterfeit values, the deferred rows, and objectives (a) and (b)."""

    groups: tuple[np.ndarray, ...]
    signatures: tuple[frozenset[int], ...]
    counterfeits: tuple[tuple[int, ...], ...]
    deferred: np.ndarray
    objective_a: float
    objective_b: float


@dataclass(frozen=True)
class Within:
    """What the model proved of (b) over the releases a first-release policy allows: every
    row in its bucket of the paper's Assign (``keep-buckets``), or the start's signatures
    each as often (``keep-signatures``, ``local-signatures``); its status there and its
    bound (None: nothing proven). The release's own certificate is over all releases; the
    two differ by the price of the policy (1,000 Adult rows, m = 3, 10 s, ``keep-buckets``:
    (b) 1,060, bound within the buckets 1,023, bound over all partitions 93)."""

    status: Status
    bound: float | None
    #: The restriction, as the certificate names it.
    label: str = "within the paper's buckets"


def whole_problem(cost: ReleaseCost, values: np.ndarray, bucket: np.ndarray,
                  signatures: Sequence[frozenset[int]], m: int, domain_size: int,
                  eligibility: Eligibility, deferral_weight: float = 1.0
                  ) -> WholeReleaseProblem:
    """The model's input: ``values`` SA codes (most frequent value first: code 0),
    ``bucket`` -1 for new rows."""
    return WholeReleaseProblem(
        points=cost.points, values=values, bucket=bucket, signatures=tuple(signatures),
        m=m, domain_size=domain_size, allow_deferrals=eligibility != "counterfeit",
        deferral_weight=deferral_weight, counterfeits_in_new_groups=eligibility != "delete",
        padding_order=tuple(range(domain_size)),
    )


def _extent(cost: ReleaseCost, problem: WholeReleaseProblem):  # type: ignore[no-untyped-def]
    if cost.box_only and cost.name == "perimeter":
        return None  # the model's own (vectorized) box extent on the same points
    from republish.models.whole_release import group_signature

    return cost.model_extent(lambda rows: len(group_signature(problem, rows)))


def _compact_start(problem: WholeReleaseProblem, cost: ReleaseCost, hint: Grouping
                   ) -> Grouping:
    """A release without old rows starts from compact groups
    (:mod:`republish.heuristics.compact_groups`) when they beat the pipeline's, which groups
    by value, not by QI (called under ``first_release="compact"``, and under ``"buckets"``
    where the model partitions every row anyway)."""
    if problem.has_old_rows:
        return hint
    groups = compact_groups(problem.points, problem.values, problem.m, lengths=cost.lengths)
    if groups is None:
        return hint
    start = _new_rows_grouping(problem, cost, groups)
    return hint if (0.0, start.objective_b) >= (hint.objective_a, hint.objective_b) else start


def _new_rows_grouping(problem: WholeReleaseProblem, cost: ReleaseCost,
                       groups: Sequence[np.ndarray]) -> Grouping:
    """A first release's ``groups`` of distinct values, without counterfeits or deferrals,
    as a :class:`Grouping`."""
    return Grouping(
        groups=tuple(groups),
        signatures=tuple(frozenset(problem.values[g].tolist()) for g in groups),
        counterfeits=((),) * len(groups), deferred=np.zeros(0, dtype=np.int64),
        objective_a=0.0, objective_b=cost.total(groups, [len(g) for g in groups]))


def _local_start(problem: WholeReleaseProblem, cost: ReleaseCost, hint: Grouping
                 ) -> Grouping:
    """``local-signatures``: a start with few signatures chosen by locality
    (:func:`~republish.solver.signature_policy.local_signatures`), or ``hint`` where the
    pipeline's release has counterfeits or deferrals, none is found, or the fit takes the
    paper's value sets only. The last happens where the compact groups' value sets hardly
    repeat (a synthetic census of 200,000 rows with 50 values at m = 10: no set is
    offered), and the paper's sets filled in row order then cost 529,756 where the paper's
    own release of them costs 71,173."""
    if hint.objective_a != 0 or len(hint.deferred):
        return hint
    compact = compact_groups(problem.points, problem.values, problem.m, lengths=cost.lengths)
    groups = local_signatures(problem, compact, hint.groups) if compact is not None else None
    if groups is None:
        return hint
    if set(value_sets(problem, groups)) <= set(value_sets(problem, hint.groups)):
        return hint
    return _new_rows_grouping(problem, cost, groups)


def _within_buckets(problem: WholeReleaseProblem, buckets: tuple[np.ndarray,
                    Sequence[frozenset[int]]] | None) -> WholeReleaseProblem:
    """A release without old rows under ``keep-buckets``: its rows held in the pipeline's
    buckets (the paper's Assign, §4.2) as if they were old rows, so that the model regroups
    them within those signatures instead of choosing its own."""
    if buckets is None or problem.has_old_rows or not (buckets[0] >= 0).any():
        return problem
    return dataclasses.replace(problem, bucket=buckets[0], signatures=tuple(buckets[1]))


def solve_whole(problem: WholeReleaseProblem, cost: ReleaseCost, hint: Grouping,
                solve: SolveOptions, deadline: Deadline, seed: int,
                first_buckets: tuple[np.ndarray, Sequence[frozenset[int]]] | None = None
                ) -> tuple[Grouping, WholeReleaseSolution, Within | None] | None:
    """The model's release when it is lexicographically no worse than ``hint``, with its
    solution (the statuses and bounds) and what was proven within the first-release
    policy; None when no time is left.

    Under ``first_release="keep-buckets"`` a release without old rows keeps the pipeline's
    buckets ``first_buckets`` (per row its bucket or -1, and the buckets' signatures); its
    statuses and bounds are then those of the release among all partitions, not of the
    restricted model: (a) left to the count model and the floor, (b) bounded by
    :func:`lower_bound_b` of the whole problem. The restricted model's status and bound
    on (b) (over the releases that keep every row in its bucket) come back as a
    :class:`Within`, shown beside the release's certificate, never as it. Under
    ``keep-signatures`` and ``local-signatures`` (:mod:`republish.solver.signature_policy`)
    the model's search keeps the signatures of its start (the pipeline's, or ones chosen by
    locality) and their counts, and the :class:`Within` is the bound over those releases."""
    seconds = deadline.left()
    if seconds < MIN_SECONDS:
        return None
    solve = _auto_policy(solve, problem)
    # Where the model partitions every row freely (the default policy's small first
    # release), compact groups are only a better start: the policy decides nothing there.
    free = solve.first_release == "buckets" and len(problem.values) <= WHOLE_MODEL_ROWS
    start = _compact_start(problem, cost, hint) if solve.first_release == "compact" or free \
        else hint
    model = _within_buckets(problem, first_buckets) \
        if solve.first_release == "keep-buckets" else problem
    kept = solve.first_release in ("keep-signatures", "local-signatures") and \
        not problem.has_old_rows
    if kept and solve.first_release == "local-signatures":
        start = _local_start(problem, cost, hint)
    # the bound within the signatures: beside the search with two workers, else before it
    # for up to WITHIN_SHARE of the budget (what it leaves goes to the search)
    relaxed = signature_problem(problem, start.groups) \
        if kept and start.objective_a == 0 and not len(start.deferred) else None
    measure = _extent(cost, model)  # `model` is `problem` wherever `relaxed` is built
    child_end = deadline.end - min(BESIDE_MARGIN * seconds, 1.0)
    pending = bound_beside(relaxed, measure, 0, rational_weight(problem.deferral_weight),
                           deadline=child_end, weights_deadline=child_end,
                           groups=start.groups) \
        if relaxed is not None and solve.workers >= 2 else None
    within_bound = lower_bound_b(relaxed, measure, 0, None,
                                 deadline=time.perf_counter()
                                 + bound_share(problem, WITHIN_SHARE) * seconds,
                                 groups=start.groups) \
        if relaxed is not None and pending is None else None
    # what the bound left, less what the step needs once the model has answered
    seconds = max(deadline.left() - AFTER_MODEL_SECONDS_PER_ROW * len(problem.values),
                  MIN_SECONDS)
    try:
        solution = solve_whole_release(
            model, time_limit=seconds, workers=solve.workers, seed=seed,
            hint=(list(start.groups), start.deferred), extent=measure,
            keep_signatures=kept)
    except ParameterError:
        # The pipeline may fill a bucket's extra group with new rows and balancing
        # counterfeits, which the model counts as eligibility counterfeits (forbidden
        # with deferrals only): then the model starts from its own count plan.
        solution = solve_whole_release(
            model, time_limit=deadline.left(), workers=solve.workers, seed=seed,
            extent=measure, keep_signatures=kept)
    if not solution.groups and len(problem.values):
        return None
    if kept and not same_signatures(problem, solution.groups, start.groups):
        return None  # the model's count plan chose others: the pipeline's release stands
    within = None
    if pending is not None:  # a failed child leaves no bound within the signatures
        within_bound = pending.collect(deadline.end)
    if within_bound is not None:
        within = Within("FEASIBLE" if solution.status_a == "OPTIMAL" else "HEURISTIC",
                        float(within_bound), "within the paper's signatures"
                        if start is hint else "within the chosen signatures")
    if model is not problem:
        # (b)'s bound within the buckets holds over the releases of the restricted (a)
        proven_a = solution.status_a == "OPTIMAL"
        within = Within(cast(Status, solution.status_b) if proven_a else "HEURISTIC",
                        solution.bound_b if proven_a else None)
        bound_b = _bound_b(problem, cost, solve, deadline, solution.objective_a,
                           solution.groups)
        solution = dataclasses.replace(
            solution, status_a="FEASIBLE", bound_a=0.0, gap_a=None, status_b="FEASIBLE",
            bound_b=bound_b, gap_b=None,
            detail=f"{solution.detail}; within the paper's buckets (keep-buckets)")
    groups = tuple(np.asarray(g, dtype=np.int64) for g in solution.groups)
    slots = [len(s) for s in solution.group_signatures]
    grouping = Grouping(
        groups=groups, signatures=tuple(solution.group_signatures),
        counterfeits=tuple(tuple(sorted(c)) for c in solution.counterfeits_per_group),
        deferred=np.asarray(solution.deferred, dtype=np.int64),
        objective_a=float(solution.objective_a), objective_b=cost.total(groups, slots),
    )
    if (grouping.objective_a, grouping.objective_b) > (hint.objective_a,
                                                       hint.objective_b + 1e-9):
        return None
    return grouping, solution, within


def _auto_policy(solve: SolveOptions, problem: WholeReleaseProblem) -> SolveOptions:
    """``solve`` with ``first_release="keep-signatures"`` for a release without old rows of
    more than AUTO_FREE_ROWS rows under ``auto`` and the default ``buckets``, and
    ``"local-signatures"`` from AUTO_LOCAL_ROWS rows where the values leave the slack."""
    if solve.mode == "auto" and solve.first_release == "buckets" and \
            len(problem.values) > AUTO_FREE_ROWS and not problem.has_old_rows:
        policy = "local-signatures" if len(problem.values) >= AUTO_LOCAL_ROWS and \
            eligibility_slack(problem) >= NEW_GROUPS_MIN_SLACK else "keep-signatures"
        return dataclasses.replace(solve, first_release=policy)
    return solve


def _bound_b(problem: WholeReleaseProblem, cost: ReleaseCost, solve: SolveOptions,
             deadline: Deadline, objective_a: float,
             groups: Sequence[np.ndarray] | None = None) -> float:
    """The row and pair bounds on (b) of the releases of (a) ``<= objective_a``, given
    the time left or up to ROW_BOUND_GRACE seconds (at most a tenth of the budget); the
    release ``groups`` prices counterfeits in the pair bound."""
    grace = min(ROW_BOUND_GRACE, 0.1 * solve.time_limit)
    return lower_bound_b(problem, _extent(cost, problem), objective_a, None,
                         deadline=time.perf_counter() + max(deadline.left(), grace),
                         groups=groups)


def bound_only(problem: WholeReleaseProblem, cost: ReleaseCost, solve: SolveOptions,
               deadline: Deadline, seed: int, objective_a: float, proven_a: bool = False
               ) -> tuple[float, str, float] | None:
    """``(bound on (a), the count model's status, bound on (b) given optimal (a))`` of a
    release the model does not solve, or None when it is too large or no time is left.
    With ``proven_a`` (``objective_a`` is A*), only the row and pair bounds of
    :func:`republish.models.whole_release_pair_bound.lower_bound_b` run, given up to
    ROW_BOUND_GRACE seconds (at most a tenth of the budget) past the deadline."""
    seconds = deadline.left()
    if len(problem.values) > BOUND_ROWS:
        return None
    if proven_a:  # A* is known: the row bound needs no model, and little time
        return objective_a, "OPTIMAL", _bound_b(problem, cost, solve, deadline, objective_a)
    if seconds < MIN_SECONDS:
        return None
    bound = whole_release_bound(problem, extent=_extent(cost, problem), budget=objective_a,
                                time_limit=seconds, workers=solve.workers, seed=seed)
    return bound.objective_a, bound.status_a, bound.objective_b


def release_certificate(
    step: str, cost: ReleaseCost, deferral_weight: float, objective_a: float,
    objective_b: float, *, status_a: Status = "HEURISTIC", bound_a: float | None = None,
    status_b: Status = "HEURISTIC", bound_b: float | None = None,
    heuristic: tuple[float, float] | None = None, detail: str = "",
    within: Within | None = None,
) -> Certificate:
    """The release's certificate: (a), then (b) given (a) (:func:`lexicographic`).

    A stage is OPTIMAL only when its bound meets its objective; (b)'s bound is over the
    releases whose (a) is optimal, so it is kept only when (a) is proven optimal.
    ``within``: (b)'s status and bound over a restricted set of releases, kept as the
    certificate's :attr:`~republish.certificate.Certificate.restricted` (the same rule:
    OPTIMAL only when its bound meets the objective).
    """
    if bound_a is not None and objective_a <= bound_a + 1e-9:
        status_a = "OPTIMAL"
    elif status_a == "OPTIMAL":
        status_a = "FEASIBLE"
    if status_a != "OPTIMAL":
        bound_b = None
        status_b = "HEURISTIC" if status_b == "OPTIMAL" else status_b
    if bound_b is not None and objective_b <= bound_b + 1e-9 * max(1.0, objective_b):
        status_b = "OPTIMAL"
    elif status_b == "OPTIMAL":
        status_b = "FEASIBLE"
    first = Certificate(
        step=f"{step} (a)", status=status_a, objective=objective_a,
        bound=None if bound_a is None else min(bound_a, objective_a),
        heuristic_objective=None if heuristic is None else heuristic[0],
        objective_name=counts_name(deferral_weight))
    second = Certificate(
        step=f"{step} (b)", status=status_b, objective=objective_b,
        bound=None if bound_b is None else min(bound_b, objective_b),
        heuristic_objective=None if heuristic is None else heuristic[1],
        objective_name=OBJECTIVES[cost.name])
    certificate = lexicographic(step, first, second)
    if within is not None:
        bound = within.bound
        status = "OPTIMAL" if bound is not None and objective_b <= bound + 1e-9 * max(
            1.0, objective_b) else "FEASIBLE" if within.status == "OPTIMAL" else within.status
        certificate = dataclasses.replace(certificate, restricted=Certificate(
            step=f"{step} (b) {within.label}", status=status, objective=objective_b,
            bound=None if bound is None else min(bound, objective_b),
            objective_name=OBJECTIVES[cost.name]))
    return dataclasses.replace(certificate, detail=detail) if detail else certificate
