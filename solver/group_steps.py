"""The grouping steps of the m-invariant release: heuristic, hint, exact model, fallback.

* :func:`group_step` -- one balanced bucket into groups (heuristic: §4.3 perimeter split;
  model: group formation); :func:`split_step` does every bucket of a release;
* :func:`partition_step` -- an m-eligible table into m-unique groups (first release;
  heuristic: Assign + split; model: set-partitioning MIP, else Assign + exact split).

Each runs the paper's greedy algorithm first, hands its answer to the exact model as a
hint and keeps the better of the two, as :mod:`republish.solver.steps` describes; the
modes and size thresholds are :mod:`republish.solver.step_modes`'. Separate from the
bucket step (:func:`republish.solver.steps.bucket_step`), which decides counts, because
these decide which rows share a group; every name here is also importable from
:mod:`republish.solver.steps`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from republish.heuristics.assign import assign_new_rows
from republish.heuristics.perimeter_split import (
    split_bucket_min_perimeter,
    split_buckets_min_perimeter,
)
from republish.models.grouping.formation import (
    GroupFormation,
    form_groups,
    grouping_objective,
    grouping_problems,
    partition_m_unique,
)
from republish.solver.certificate import Certificate
from republish.solver.step_modes import (
    AUTO_COLUMNS,
    AUTO_PAIR_ROWS,
    EXACT_COLUMNS,
    MIN_MODEL_TIME,
    Mode,
    Objective,
    _certificate,
    check_solver_options,
)

__all__ = ["group_step", "partition_step", "repair_groups", "split_step"]


def repair_groups(values: np.ndarray, fake: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Swap counterfeits out of groups holding no real row (the greedy split may put a
    bucket's counterfeits together): a real row of the same value moves in from a group
    that keeps another real row. Needs at least as many real rows as groups."""
    groups = groups.copy()
    labels, inverse = np.unique(groups, return_inverse=True)
    # real rows per group by one count (a pass per group took 8 of 13 s at 1M rows)
    real_counts = np.bincount(inverse.reshape(-1)[~fake], minlength=len(labels))
    reals = dict(zip(labels.astype(np.int64).tolist(), real_counts.tolist(), strict=True))
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


def _model_allowed(rows: int, s: int, mode: Mode) -> bool:
    """Whether ``mode`` groups a bucket of ``rows`` rows and ``s`` values by the model:
    ``exact`` always, ``auto`` when the bucket is small enough to be solved quickly."""
    if mode == "heuristic":
        return False
    if mode == "exact":
        return True
    k = rows // max(s, 1)
    return rows <= AUTO_PAIR_ROWS if s <= 2 else k ** s <= AUTO_COLUMNS


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
    remaining = time_limit - heuristic_time
    if not _model_allowed(len(labels), len(set(labels.tolist())), mode) \
            or remaining < MIN_MODEL_TIME:
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
    # every bucket's rows in ascending order, by one sort instead of a pass per bucket
    members = np.split(np.argsort(bucket_of, kind="stable"), np.cumsum(sizes)[:-1])
    for b in np.argsort(-sizes, kind="stable").tolist():
        rows = members[b]
        groups[rows] = repair_groups(labels[rows], fake[rows], groups[rows])
        s = len(set(labels[rows].tolist()))
        if len(rows) == s:  # one group: nothing to choose
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
        if not _model_allowed(len(rows), s, bucket_mode):
            # group_step would split the bucket again and return these groups (the split of
            # a bucket reads only its rows): at 2M rows, auto spent 5x the heuristic here
            objective_sum += grouping_objective(np.nan_to_num(points[rows]), fake[rows],
                                                groups[rows], objective)
            worst = max(worst, "HEURISTIC", key=order.index)
            continue
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
