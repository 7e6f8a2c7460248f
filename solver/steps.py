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

``mode``: ``heuristic`` never runs a model; ``exact`` always does (up to the models' own
size limits); ``auto`` runs it when the instance is below the thresholds below, chosen
from ``benchmarks/exact_models.py`` (see ``benchmarks/RESULTS.md``) so that the model
usually finishes within the default 10 s on 2 cores. Below ``MIN_MODEL_TIME`` seconds no
model runs: the heuristic answers with status ``HEURISTIC``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Literal, cast

import numpy as np

from republish.errors import InputError, ParameterError, RepublishError
from republish.heuristics.assign import assign_new_rows
from republish.heuristics.balancing import balance_buckets
from republish.heuristics.eligibility import greedy_hybrid, maximal_subset, minimal_superset
from republish.heuristics.perimeter_split import (
    split_bucket_min_perimeter,
    split_buckets_min_perimeter,
)
from republish.models.bucket_assignment import (
    BucketAssignment,
    bucket_assignment_from_counts,
    bucket_assignment_problems,
    solve_bucket_assignment,
)
from republish.models.grouping.formation import (
    GroupFormation,
    form_groups,
    grouping_objective,
    grouping_problems,
    partition_m_unique,
)
from republish.problems.buckets import BucketCounts
from republish.solver.certificate import Certificate, Status
from republish.solver.frequent_counterfeits import prefer_frequent_values

__all__ = [
    "AUTO_BUCKET_VARIABLES",
    "AUTO_COLUMNS",
    "AUTO_PAIR_ROWS",
    "EXACT_COLUMNS",
    "MIN_MODEL_TIME",
    "Mode",
    "bucket_step",
    "check_solver_options",
    "greedy_counts",
    "group_step",
    "partition_step",
    "repair_groups",
    "split_step",
]

Mode = Literal["auto", "exact", "heuristic"]
Objective = Literal["perimeter", "ncp"]
Eligibility = Literal["counterfeit", "delete", "hybrid"]

#: ``auto``: bucket assignment exact while buckets·values stay below this (every measured
#: instance, up to 2,000 buckets, was proven optimal well within 10 s).
AUTO_BUCKET_VARIABLES = 200_000
#: ``auto``: signature size 2 exact up to this many rows in a bucket (priced min-cost flow).
AUTO_PAIR_ROWS = 20_000
#: ``auto``: signature size >= 3 (and partitions) exact while the candidate groups of the
#: set-partitioning MIP number at most this (price-and-fix proves a 60-row bucket of
#: signature size 5, 248,832 columns, optimal in about 6 s).
AUTO_COLUMNS = 250_000
#: ``exact``: the most candidate groups the set-partitioning MIP may enumerate (size >= 3,
#: partitions). Above it the CP-SAT model or the heuristic answers: enumerating k^s groups
#: of a large bucket (10^8 for k = 500, s = 3) would exhaust memory long before SCIP
#: could use them.
EXACT_COLUMNS = 250_000
#: Less time than this (seconds) for a model: the heuristic answers alone.
MIN_MODEL_TIME = 0.05


def check_solver_options(mode: str, time_limit: float, workers: int) -> None:
    """Raise :class:`ParameterError` naming the bad ``mode``, ``time_limit`` or ``workers``."""
    if mode not in ("auto", "exact", "heuristic"):
        raise ParameterError(f"mode must be 'auto', 'exact' or 'heuristic', got {mode!r}.")
    if isinstance(time_limit, bool) or not (
            isinstance(time_limit, int | float) and time_limit > 0):
        raise ParameterError(f"time_limit (--time-limit) must be a positive number of "
                             f"seconds, got {time_limit!r}.")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ParameterError(f"workers must be a positive integer, got {workers!r}.")


def _certificate(step: str, status: str, objective: float, bound: float | None,
                 heuristic: float | None, times: dict[str, float], detail: str = ""
                 ) -> Certificate:
    return Certificate(step=step, status=cast(Status, status), objective=objective,
                       bound=bound, heuristic_objective=heuristic, times=times, detail=detail)


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


# --- group formation -------------------------------------------------------------------


def repair_groups(values: np.ndarray, fake: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Swap counterfeits out of groups holding no real row (the greedy split may put a
    bucket's counterfeits together): a real row of the same value moves in from a group
    that keeps another real row. Needs at least as many real rows as groups."""
    groups = groups.copy()
    labels = np.unique(groups)
    reals = {int(g): int((~fake[groups == g]).sum()) for g in labels}
    for g in [g for g, r in reals.items() if r == 0]:
        for i in np.flatnonzero(groups == g).tolist():
            candidates = np.flatnonzero((values == values[i]) & ~fake & (groups != g))
            donors = [j for j in candidates.tolist() if reals[int(groups[j])] >= 2]
            if donors:
                j = donors[0]
                groups[i], groups[j] = groups[j], g
                reals[int(groups[i])] -= 1
                reals[g] += 1
                break
    return groups


def _rows(points: np.ndarray, values: Sequence[str] | np.ndarray,
          is_counterfeit: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points as floats, values as strings, and the counterfeit flags (NaN codes when
    ``is_counterfeit`` is None)."""
    points = np.asarray(points, dtype=np.float64)
    labels = np.asarray(values, dtype=object).astype(str)
    fake = (np.isnan(points).any(axis=1) if is_counterfeit is None
            else np.asarray(is_counterfeit, dtype=bool))
    return points, labels, fake


def _split_one(points: np.ndarray, values: np.ndarray, fake: np.ndarray) -> np.ndarray:
    marked = np.where(fake[:, None], np.nan, points)
    return repair_groups(values, fake, split_bucket_min_perimeter(marked, values).groups)


def group_step(
    points: np.ndarray,
    values: Sequence[str] | np.ndarray,
    is_counterfeit: np.ndarray | None = None,
    *,
    objective: Objective = "perimeter",
    mode: Mode = "auto",
    time_limit: float = 10.0,
    workers: int = 1,
) -> GroupFormation:
    """One balanced bucket (points normalized to [0, 1]; NaN or ``is_counterfeit`` marks
    counterfeits) into groups of one row per value: §4.3 split, then the exact model."""
    check_solver_options(mode, time_limit, workers)
    started = time.perf_counter()
    points, labels, fake = _rows(points, values, is_counterfeit)
    greedy = _split_one(points, labels, fake)
    heuristic_time = time.perf_counter() - started
    s = len(set(labels.tolist()))
    k = len(labels) // max(s, 1)
    small = len(labels) <= AUTO_PAIR_ROWS if s <= 2 else k ** s <= AUTO_COLUMNS
    remaining = time_limit - heuristic_time
    if mode == "heuristic" or (mode == "auto" and not small) or remaining < MIN_MODEL_TIME:
        value = grouping_objective(np.nan_to_num(points), fake, greedy, objective)
        result = GroupFormation(
            groups=greedy, group_count=int(len(np.unique(greedy))), objective=value,
            bound=None, status="HEURISTIC", method="perimeter split",
            wall_time_s=heuristic_time, certificate=_certificate(
                "group-formation", "HEURISTIC", value, None, value, {}),
        )
    else:
        result = form_groups(points, labels, fake, objective=objective, hint_groups=greedy,
                             time_limit=remaining, num_workers=workers,
                             size_limit=EXACT_COLUMNS if mode == "exact" else AUTO_COLUMNS)
    hint_value = grouping_objective(np.nan_to_num(points), fake, greedy, objective)
    times = {"heuristic": heuristic_time, "model": result.wall_time_s}
    certificate = _certificate("group-formation", result.status, result.objective,
                               result.bound, hint_value, times,
                               detail=f"mode {mode}, {result.method}")
    return dataclasses.replace(result, certificate=certificate)


def split_step(
    points: np.ndarray,
    values: Sequence[str] | np.ndarray,
    buckets: np.ndarray,
    is_counterfeit: np.ndarray | None = None,
    *,
    objective: Objective = "perimeter",
    mode: Mode = "auto",
    time_limit: float = 10.0,
    workers: int = 1,
) -> tuple[np.ndarray, Certificate]:
    """Every balanced bucket of a release into groups; returns global group labels and one
    certificate (objectives and bounds summed; a bucket left to the heuristic counts with
    bound 0). Buckets with one group need no model; the rest share the time limit in
    order of size, largest first."""
    check_solver_options(mode, time_limit, workers)
    started = time.perf_counter()
    points, labels, fake = _rows(points, values, is_counterfeit)
    marked = np.where(fake[:, None], np.nan, points)
    bucket_labels, bucket_of = np.unique(np.asarray(buckets), return_inverse=True)
    greedy = split_buckets_min_perimeter(marked, labels, bucket_of).groups
    groups = greedy.copy()
    heuristic_time = time.perf_counter() - started
    objective_sum, bound_sum, worst = 0.0, 0.0, "OPTIMAL"
    order = ["OPTIMAL", "FEASIBLE", "HEURISTIC"]
    sizes = np.bincount(bucket_of, minlength=len(bucket_labels))
    rows_left = int(sizes.sum())
    next_label = int(groups.max()) + 1 if len(groups) else 0
    for b in np.argsort(-sizes, kind="stable").tolist():
        rows = np.flatnonzero(bucket_of == b)
        groups[rows] = repair_groups(labels[rows], fake[rows], groups[rows])
        if len(rows) == len(set(labels[rows].tolist())):  # one group: nothing to choose
            value = grouping_objective(np.nan_to_num(points[rows]), fake[rows], groups[rows],
                                       objective)
            objective_sum += value
            bound_sum += value
            rows_left -= len(rows)
            continue
        # The bucket's share of the time left, by rows.
        remaining = time_limit - (time.perf_counter() - started)
        share = remaining * len(rows) / max(rows_left, 1)
        rows_left -= len(rows)
        bucket_mode: Mode = mode if share >= MIN_MODEL_TIME else "heuristic"
        found = group_step(points[rows], labels[rows], fake[rows], objective=objective,
                           mode=bucket_mode, time_limit=max(share, 0.01), workers=workers)
        groups[rows] = found.groups + next_label
        next_label += found.group_count
        objective_sum += found.objective
        bound_sum += found.bound if found.bound is not None else 0.0
        worst = max(worst, found.status, key=order.index)
    _, groups = np.unique(groups, return_inverse=True)
    certificate = _certificate(
        "group-formation", worst, objective_sum, bound_sum,
        grouping_objective(np.nan_to_num(points), fake, greedy, objective),
        {"heuristic": heuristic_time, "model": time.perf_counter() - started - heuristic_time},
        detail=f"mode {mode}, {len(bucket_labels)} buckets",
    )
    return groups.astype(np.int64), certificate


def _assign_buckets(labels: np.ndarray, fake: np.ndarray, m: int) -> np.ndarray:
    """Algorithm Assign on the rows' counts; real rows first, counterfeits last per value."""
    names = sorted(set(labels.tolist()))
    pools = {v: np.concatenate([np.flatnonzero((labels == v) & ~fake),
                                np.flatnonzero((labels == v) & fake)]) for v in names}
    bucket = np.full(len(labels), -1, dtype=np.int64)
    signature_ids: dict[frozenset[str], int] = {}
    moves = assign_new_rows({v: len(r) for v, r in pools.items()}, m).moves
    for move_values, alpha in moves:
        b = signature_ids.setdefault(frozenset(move_values), len(signature_ids))
        for v in move_values:
            bucket[pools[v][:alpha]] = b
            pools[v] = pools[v][alpha:]
    return bucket


def partition_step(
    points: np.ndarray,
    values: Sequence[str] | np.ndarray,
    m: int,
    is_counterfeit: np.ndarray | None = None,
    *,
    objective: Objective = "perimeter",
    mode: Mode = "auto",
    time_limit: float = 10.0,
    workers: int = 1,
) -> GroupFormation:
    """An m-eligible table (first release, leftover rows) into m-unique groups that each
    hold a real row: Assign + split as the heuristic, then the set-partitioning MIP when
    small enough, else Assign's buckets grouped by :func:`split_step` in ``mode``."""
    check_solver_options(mode, time_limit, workers)
    started = time.perf_counter()
    points, labels, fake = _rows(points, values, is_counterfeit)
    bucket = _assign_buckets(labels, fake, m)
    split, _ = split_step(points, labels, bucket, fake, objective=objective,
                          mode="heuristic", time_limit=time_limit, workers=workers)
    # None when Assign left a bucket with more groups than real rows: the plan takes over.
    greedy = None if grouping_problems(labels, fake, split, m) else split
    heuristic_time = time.perf_counter() - started
    remaining = time_limit - heuristic_time
    limit = AUTO_COLUMNS if mode == "auto" else EXACT_COLUMNS
    if mode == "heuristic" or remaining < MIN_MODEL_TIME:
        limit = 0
    result = partition_m_unique(points, labels, m, fake, objective=objective,
                                time_limit=max(remaining, 0.01), num_workers=workers,
                                hint_groups=greedy, size_limit=limit)
    if result.status == "HEURISTIC" and mode != "heuristic" and remaining >= MIN_MODEL_TIME \
            and greedy is not None:
        groups, cert = split_step(points, labels, bucket, fake, objective=objective,
                                  mode=mode, time_limit=time_limit - heuristic_time,
                                  workers=workers)
        if not grouping_problems(labels, fake, groups, m) and cert.objective <= result.objective:
            # Exact within Assign's buckets: no bound on the partition itself.
            result = dataclasses.replace(result, groups=groups, objective=cert.objective,
                                         group_count=int(groups.max()) + 1, method="assign+exact")
    hint_value = None if greedy is None else grouping_objective(
        np.nan_to_num(points), fake, greedy, objective)
    times = {"heuristic": heuristic_time,
             "model": time.perf_counter() - started - heuristic_time}
    certificate = _certificate("m-unique-partition", result.status, result.objective,
                               result.bound, hint_value, times,
                               detail=f"mode {mode}, {result.method}")
    return dataclasses.replace(result, certificate=certificate)
