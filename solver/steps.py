"""Per-step entry points of the m-invariant release: heuristic, hint, exact model, fallback.

Every step runs the paper's greedy algorithm first, hands its answer to the exact model
as a hint, solves under the time limit, keeps the better of the two and falls back to
the heuristic when the model is too large or finds nothing in time. Each returns the
model module's result type with a :class:`~republish.solver.certificate.Certificate`
(status ``OPTIMAL``/``FEASIBLE`` when the model's answer is kept, ``HEURISTIC`` when the
heuristic's is, or ``OPTIMAL`` when the model's bound proves the heuristic's answer
optimal; ``bound`` is the model's proven bound even when the heuristic wins; ``times``
has the wall time of the heuristic and of the model). The bucket step keeps the
heuristic's counts on a tie (see :func:`bucket_step`).

* :func:`bucket_step` -- balancing, extra rows and eligibility on counts
  (heuristics: balancing, m-eligibility Algorithms 1-3; model: bucket assignment);
* :func:`group_step` -- one balanced bucket into groups (heuristic: §4.3 perimeter split;
  model: group formation); :func:`split_step` does every bucket of a release;
* :func:`partition_step` -- an m-eligible table into m-unique groups (first release;
  heuristic: Assign + split; model: set-partitioning MIP, else Assign + exact split).

The bucket step is here; the grouping steps are in :mod:`republish.solver.group_steps`,
and ``mode`` with the size thresholds of ``auto`` in :mod:`republish.solver.step_modes`.
Both modules' names are re-exported here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Mapping, Sequence

from republish.errors import InputError, ParameterError, RepublishError
from republish.heuristics.balancing import balance_buckets
from republish.heuristics.eligibility import greedy_hybrid, maximal_subset, minimal_superset
from republish.models.bucket_assignment import (
    BucketAssignment,
    bucket_assignment_from_counts,
    bucket_assignment_problems,
    solve_bucket_assignment,
)
from republish.problems.buckets import BucketCounts
from republish.solver.frequent_counterfeits import prefer_frequent_values
from republish.solver.group_steps import _assign_buckets as _assign_buckets
from republish.solver.group_steps import _rows as _rows
from republish.solver.group_steps import _split_one as _split_one
from republish.solver.group_steps import group_step, partition_step, repair_groups, split_step
from republish.solver.step_modes import (
    AUTO_BUCKET_VARIABLES,
    AUTO_COLUMNS,
    AUTO_PAIR_ROWS,
    EXACT_COLUMNS,
    MIN_MODEL_TIME,
    Eligibility,
    Mode,
    Objective,
    _certificate,
    check_solver_options,
)

__all__ = [
    "AUTO_BUCKET_VARIABLES",
    "AUTO_COLUMNS",
    "AUTO_PAIR_ROWS",
    "EXACT_COLUMNS",
    "MIN_MODEL_TIME",
    "Eligibility",
    "Mode",
    "Objective",
    "bucket_step",
    "check_solver_options",
    "greedy_counts",
    "group_step",
    "partition_step",
    "repair_groups",
    "split_step",
]


# --- bucket assignment -----------------------------------------------------------------


def greedy_counts(
    buckets: Sequence[BucketCounts], new_counts: Mapping[str, int], m: int,
    eligibility: Eligibility, allow_new_values: bool, new_values: Collection[str],
    deferral_weight: float,
) -> BucketAssignment | None:
    """The paper's order: deficits from new rows else counterfeits, then Algorithm 1/2/3."""
    started = time.perf_counter()
    balancing = balance_buckets([b.counts for b in buckets], new_counts)
    left = balancing.remaining
    try:
        if eligibility == "counterfeit":
            solution = minimal_superset(left, m, allow_new_values=allow_new_values,
                                        new_values=list(new_values))
        elif eligibility == "delete":
            solution = maximal_subset(left, m)
        else:
            solution = greedy_hybrid(left, m, allow_new_values=allow_new_values,
                                     new_values=list(new_values))
    except RepublishError:
        return None  # e.g. fewer than m values left and no new values allowed
    if solution.status == "INFEASIBLE":
        return None
    return bucket_assignment_from_counts(
        buckets, new_counts, m, balancing.targets, balancing.from_new, solution.counterfeits,
        solution.deletions, deferral_weight, time.perf_counter() - started,
    )


def bucket_step(
    buckets: Sequence[BucketCounts],
    new_counts: Mapping[str, int],
    m: int,
    *,
    mode: Mode = "auto",
    eligibility: Eligibility = "counterfeit",
    deferral_weight: float = 1.0,
    allow_new_values: bool = False,
    new_values: Collection[str] = (),
    time_limit: float = 10.0,
    workers: int = 1,
    value_order: Sequence[str] = (),
) -> BucketAssignment:
    """Counts of one release step (see :func:`solve_bucket_assignment`), best of greedy and
    model. ``eligibility`` selects what may make the leftover eligible: counterfeits,
    deferrals (``delete``) or both (``hybrid``). The model's counts replace the greedy's
    only when strictly better; on a tie its bound certifies the greedy's counts. With
    ``value_order`` (most frequent first), the eligibility counterfeits then move to the
    earliest values that can take them
    (:func:`republish.solver.frequent_counterfeits.prefer_frequent_values`).

    Raises
    ------
    InputError
        when neither the greedy phases nor the model find a publishable answer.
    """
    check_solver_options(mode, time_limit, workers)
    if eligibility not in ("counterfeit", "delete", "hybrid"):
        raise ParameterError(f"eligibility must be 'counterfeit', 'delete' or 'hybrid', "
                             f"got {eligibility!r}.")
    started = time.perf_counter()
    allow_deferrals = eligibility != "counterfeit"
    greedy = greedy_counts(buckets, new_counts, m, eligibility, allow_new_values, new_values,
                            deferral_weight)
    if greedy is not None and bucket_assignment_problems(
            buckets, new_counts, m, greedy, allow_deferrals, allow_new_values, new_values):
        greedy = None
    heuristic_time = time.perf_counter() - started
    size = len(buckets) * max(len({v for b in buckets for v in b.signature}), 1)
    remaining = time_limit - heuristic_time
    run_model = mode == "exact" or (mode == "auto" and size <= AUTO_BUCKET_VARIABLES)
    model: BucketAssignment | None = None
    if run_model and remaining >= MIN_MODEL_TIME:
        model = solve_bucket_assignment(
            buckets, new_counts, m, allow_deferrals=allow_deferrals,
            deferral_weight=deferral_weight, time_limit=remaining, num_workers=workers,
            hint=greedy, allow_new_values=allow_new_values, new_values=new_values,
            eligibility_counterfeits=eligibility != "delete",
        )
    times = {"heuristic": heuristic_time}
    if model is not None:
        times["model"] = model.wall_time_s
    bound = model.bound if model is not None else None
    heuristic_value = greedy.objective if greedy is not None else None
    # On a tie the paper's choice is kept: both are optimal for this release, but the
    # greedy fills deficits with new rows first, and the model's arbitrary optimum can
    # leave states that need more counterfeits later (benchmarks/RESULTS.md, Adult m = 7).
    if model is not None and model.feasible and (
            greedy is None or model.objective < greedy.objective):
        chosen, status = model, model.status
    elif greedy is not None:
        proven = bound is not None and greedy.objective <= bound + 1e-9
        chosen, status = greedy, "OPTIMAL" if proven else "HEURISTIC"
    else:
        reason = model.status if model is not None else "no model run"
        raise InputError(
            f"no publishable choice of counts (greedy: none; model: {reason}); allow "
            "deferrals (eligibility 'delete' or 'hybrid') or new values for counterfeits, "
            "or lower m."
        )
    preferred = prefer_frequent_values(chosen, value_order, m,
                                       new_values if allow_new_values else ())
    if preferred is not chosen and not bucket_assignment_problems(
            buckets, new_counts, m, preferred, allow_deferrals, allow_new_values, new_values):
        chosen = preferred
    certificate = _certificate("bucket-assignment", status, chosen.objective, bound,
                               heuristic_value, times,
                               detail=f"mode {mode}, {len(buckets)} buckets")
    return dataclasses.replace(chosen, status=status, bound=bound, certificate=certificate)
