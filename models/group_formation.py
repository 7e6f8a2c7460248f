"""Group formation: split a balanced bucket into groups of one row per signature value, or
an m-eligible table into m-unique groups, with the least generalization.

The m-invariance paper (Xiao & Tao, SIGMOD 2007, §4.3) halves balanced buckets greedily
by the minimum perimeter-sum scheme; here the same partition is optimized exactly
(design notes, "Optimization view"):

* signature size 2: a minimum-cost perfect matching, solved exactly at any size
  (:mod:`republish.models.group_formation_pairs`: min-cost flow on candidate arcs,
  priced with a dual certificate);
* signature size >= 3 (3-dimensional matching, NP-hard): a set-partitioning MIP over the
  ``k^s`` candidate groups (:mod:`republish.models.group_formation_mip`, SCIP) while they
  number at most ``size_limit``; else CP-SAT with per-group QI minima and maxima
  (:mod:`republish.models.group_formation_cpsat`) hinted with the greedy split for
  buckets of at most ``cpsat_rows`` rows; beyond, the hint (or a round-robin grouping);
* :func:`partition_m_unique` (first release, leftover new rows): the set-partitioning MIP
  while its candidate groups number at most ``size_limit``, else the hint (the solver
  passes Assign + split).

Costs. Rows are QI codes normalized to [0, 1] per QI (pass a :class:`Domain` to normalize
raw codes); a group's length on QI ``j`` is ``max - min`` over its *real* rows. Counterfeits
have no QI values: they take the group's box, so they add nothing to its lengths but
count in ``|G|``. Objectives: ``perimeter`` = ``Σ_G |G| · Σ_j length_j`` (§4.3) and
``ncp`` = ``Σ_G real(G) · Σ_j length_j / (real rows · d)``. Hierarchy QIs are measured by
their leaf-code range here (the published LCA label may cover more leaves).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import pandas as pd

from republish.bucket_types import plan_m_unique_groups
from republish.certificate import Certificate, Status
from republish.errors import InputError, ParameterError
from republish.generalization import Domain
from republish.models.group_formation_cpsat import CP_SCALE, solve_bucket_grouping
from republish.models.group_formation_mip import (
    Columns,
    bucket_columns,
    partition_columns,
    solve_set_partition,
)
from republish.models.group_formation_pairs import (
    FIRST_ROUND_SECONDS_PER_ROW,
    SCALE,
    match_pairs,
)

__all__ = [
    "GroupFormation",
    "form_groups",
    "grouping_objective",
    "grouping_problems",
    "partition_m_unique",
]

Objective = Literal["perimeter", "ncp"]


@dataclass(frozen=True, eq=False)
class GroupFormation:
    """``groups[i]``: group (0..group_count-1) of row ``i``; objective, bound and status
    (``OPTIMAL``, ``FEASIBLE``, ``HEURISTIC``) of the grouping; ``method`` that made it."""

    groups: np.ndarray
    group_count: int
    objective: float
    bound: float | None
    status: str
    method: str
    solve_time_s: float
    certificate: Certificate


def _prepare(
    codes: np.ndarray,
    values: Sequence[str] | np.ndarray,
    is_counterfeit: np.ndarray | None,
    domain: Domain | None,
    objective: str,
    time_limit: float,
    num_workers: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    points = np.asarray(codes, dtype=np.float64)
    if points.ndim != 2:
        raise InputError(f"codes must be an (n, d) array, got shape {points.shape}.")
    labels = np.asarray(values, dtype=object).astype(str)
    if len(labels) != len(points):
        raise InputError(f"{len(points)} rows of codes but {len(labels)} sensitive values.")
    if is_counterfeit is None:
        fake = np.isnan(points).any(axis=1)
    else:
        fake = np.asarray(is_counterfeit, dtype=bool)
        if fake.shape != (len(points),):
            raise InputError(f"is_counterfeit must have one flag per row ({len(points)}).")
    if objective not in ("perimeter", "ncp"):
        raise ParameterError(f"objective must be 'perimeter' or 'ncp', got {objective!r}.")
    if not (isinstance(time_limit, int | float) and time_limit > 0):
        raise ParameterError(
            f"time_limit must be a positive number of seconds, got {time_limit!r}."
        )
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ParameterError(f"num_workers must be a positive integer, got {num_workers!r}.")
    if domain is not None:
        extent = np.where(domain.high > domain.low, domain.high - domain.low, 1.0)
        points = (points - domain.low) / extent
    points = np.where(fake[:, None], np.nan, points)
    real = points[~fake]
    if len(real) and (not np.isfinite(real).all() or real.min() < -1e-9 or real.max() > 1 + 1e-9):
        raise InputError(
            "QI codes of real rows must be finite and normalized to [0, 1]; pass domain= "
            "to normalize raw codes."
        )
    return np.clip(points, 0.0, 1.0), labels, fake


def grouping_objective(
    points: np.ndarray, is_counterfeit: np.ndarray, groups: np.ndarray, objective: Objective
) -> float:
    """Perimeter sum or NCP of a grouping of normalized points (see the module docstring)."""
    if len(groups) == 0:
        return 0.0
    labels, inverse = np.unique(groups, return_inverse=True)
    d = points.shape[1]
    real = ~np.asarray(is_counterfeit, dtype=bool)
    low = np.full((len(labels), d), np.inf)
    high = np.full((len(labels), d), -np.inf)
    np.minimum.at(low, inverse[real], points[real])
    np.maximum.at(high, inverse[real], points[real])
    length = np.where(np.isfinite(low), high - low, 0.0).sum(axis=1)
    if objective == "perimeter":
        return float((np.bincount(inverse, minlength=len(labels)) * length).sum())
    real_size = np.bincount(inverse[real], minlength=len(labels))
    total = int(real.sum()) * d
    return float((real_size * length).sum() / total) if total else 0.0


def grouping_problems(
    values: np.ndarray, is_counterfeit: np.ndarray, groups: np.ndarray, m: int,
    exact_signature: Sequence[str] | None = None,
) -> list[str]:
    """Why ``groups`` is not a valid grouping (empty when valid): every group holds at
    least ``m`` rows of distinct values and a real row; with ``exact_signature``, exactly
    one row of each of its values."""
    if len(groups) != len(values):
        return [f"{len(groups)} labels for {len(values)} rows"]
    if len(groups) == 0:
        return []
    labels, group_index = np.unique(np.asarray(groups), return_inverse=True)
    names, value_index = np.unique(np.asarray(values, dtype=object).astype(str),
                                   return_inverse=True)
    fake = np.asarray(is_counterfeit, dtype=bool)
    size = np.bincount(group_index, minlength=len(labels))
    real = np.bincount(group_index[~fake], minlength=len(labels))
    pairs = np.unique(group_index.astype(np.int64) * len(names) + value_index)
    distinct = np.bincount(pairs // len(names), minlength=len(labels))
    repeats = distinct < size
    small = size < m
    mismatch = np.zeros(len(labels), dtype=bool)
    if exact_signature is not None:
        wanted = set(exact_signature)
        inside = np.array([name in wanted for name in names.tolist()])
        outside = np.bincount(group_index[~inside[value_index]], minlength=len(labels))
        mismatch = repeats | (outside > 0) | (size != len(exact_signature))
    problems: list[str] = []
    for g in np.flatnonzero(repeats | small | (real == 0) | mismatch).tolist():
        label = labels[g]
        if repeats[g]:
            problems.append(f"group {label}: repeats a sensitive value")
        if small[g]:
            problems.append(f"group {label}: {size[g]} rows, fewer than {m}")
        if real[g] == 0:
            problems.append(f"group {label}: counterfeits only")
        if mismatch[g]:
            held = sorted(names[value_index[group_index == g]].tolist())
            problems.append(f"group {label}: values {held} != signature")
    return problems


def _round_robin(value_index: np.ndarray, fake: np.ndarray, points: np.ndarray, k: int
                 ) -> np.ndarray:
    """A valid grouping without optimization: each value's real rows (sorted on the sum of
    their codes) fill consecutive groups from where the previous value's stopped, so the
    ``>= k`` real rows cover every group; counterfeits take the remaining slots."""
    groups = np.empty(len(value_index), dtype=np.int64)
    start = 0
    key = np.nan_to_num(points).sum(axis=1)
    for v in range(int(value_index.max()) + 1 if len(value_index) else 0):
        rows = np.flatnonzero(value_index == v)
        real_rows = rows[~fake[rows]]
        real_rows = real_rows[np.argsort(key[real_rows], kind="stable")]
        slots = (start + np.arange(k)) % k
        groups[real_rows] = slots[: len(real_rows)]
        groups[rows[fake[rows]]] = slots[len(real_rows):]
        start = (start + len(real_rows)) % k
    return groups


def _finish(
    step: str, points: np.ndarray, fake: np.ndarray, groups: np.ndarray, objective: Objective,
    status: str, method: str, bound: float | None, started: float,
    heuristic: float | None = None, detail: str = "",
) -> GroupFormation:
    value = grouping_objective(points, fake, groups, objective)
    if status == "OPTIMAL" and bound is None:
        bound = value
    elapsed = time.perf_counter() - started
    bound = None if bound is None else min(bound, value)
    return GroupFormation(
        groups=groups, group_count=int(len(np.unique(groups))), objective=value, bound=bound,
        status=status, method=method, solve_time_s=elapsed,
        certificate=Certificate(step=step, status=cast(Status, status), objective=value,
                                bound=bound, heuristic_objective=heuristic,
                                times={method: elapsed}, detail=detail),
    )


def form_groups(
    codes: np.ndarray,
    values: Sequence[str] | np.ndarray,
    is_counterfeit: np.ndarray | None = None,
    signature: Sequence[str] | None = None,
    objective: Objective = "perimeter",
    domain: Domain | None = None,
    time_limit: float = 10.0,
    num_workers: int = 1,
    hint_groups: np.ndarray | None = None,
    size_limit: int = 60_000,
    cpsat_rows: int = 60,
    random_seed: int = 0,
) -> GroupFormation:
    """Partition a balanced bucket into groups of one row per signature value.

    Parameters
    ----------
    codes:
        ``(n, d)`` QI codes normalized to [0, 1], or raw codes with ``domain``; counterfeit
        rows' codes are ignored (NaN marks a counterfeit when ``is_counterfeit`` is None).
    values, signature:
        Sensitive value per row; the bucket's signature (default: the values present).
        Every signature value must hold the same number ``k`` of rows, of which at
        least ``k`` in total are real (every group keeps a real row).
    hint_groups:
        A valid grouping (e.g. the §4.3 perimeter split) to warm-start the exact models,
        returned with status ``HEURISTIC`` when none applies or none finds a solution.
    size_limit:
        Most candidate groups (``k^s``) the set-partitioning MIP may enumerate.
    cpsat_rows:
        Above ``size_limit``, buckets of at most this many rows still get the CP-SAT
        model (hinted, time-limited).

    Returns a :class:`GroupFormation`; status ``OPTIMAL`` (signature size 2: for codes
    rounded to 1e-5), ``FEASIBLE`` (time limit; ``bound`` is a proven lower bound) or
    ``HEURISTIC`` (also signature size 2 with a hint and less time left than the first
    round of the flow needs, :data:`FIRST_ROUND_SECONDS_PER_ROW` per row).
    """
    started = time.perf_counter()
    points, labels, fake = _prepare(codes, values, is_counterfeit, domain, objective,
                                    time_limit, num_workers)
    order = list(dict.fromkeys(sorted(set(labels.tolist())))) if signature is None else [
        str(v) for v in signature]
    if len(set(order)) != len(order) or not set(labels.tolist()) <= set(order):
        raise InputError(f"values {sorted(set(labels.tolist()))} must lie in the signature "
                         f"{order}, which may not repeat a value.")
    value_index = pd.Index(order).get_indexer(labels)
    counts = np.bincount(value_index, minlength=len(order))
    k = int(counts.max()) if len(counts) else 0
    if (counts != k).any():
        raise InputError(f"the bucket is not balanced: rows per value {counts.tolist()} "
                         f"for signature {order}.")
    if int((~fake).sum()) < k:
        raise InputError(f"{int((~fake).sum())} real rows cannot give each of {k} groups one.")
    hint = None if hint_groups is None else np.asarray(hint_groups, dtype=np.int64)
    if hint is not None and grouping_problems(labels, fake, hint, len(order), order):
        hint = None  # an invalid hint is ignored rather than trusted
    hint_value = None if hint is None else grouping_objective(points, fake, hint, objective)
    step = "group-formation"
    if len(labels) == 0:
        return _finish(step, points, fake, np.zeros(0, np.int64), objective, "OPTIMAL",
                       "empty", 0.0, started)
    if len(order) == 1:
        return _finish(step, points, fake, np.arange(len(labels)), objective, "OPTIMAL",
                       "singletons", None, started)
    if len(order) == 2:
        first_round = FIRST_ROUND_SECONDS_PER_ROW * len(labels)
        if hint is not None and time_limit - (time.perf_counter() - started) < first_round:
            return _finish(step, points, fake, hint, objective, "HEURISTIC", "hint", None,
                           started, hint_value,
                           detail=f"less time left than the first round (~{first_round:.2g} s)")
        return _form_pairs(step, points, labels, fake, value_index, objective, time_limit,
                           hint, hint_value, started)
    remaining = max(time_limit - (time.perf_counter() - started), 0.01)
    columns = bucket_columns(points, value_index, fake, k, objective, size_limit)
    if columns is not None:
        exact = _solve_columns(step, points, fake, columns, remaining, hint, hint_value,
                               objective, started)
        if exact is not None:
            return exact
    elif len(labels) <= cpsat_rows:
        found = solve_bucket_grouping(points, value_index, fake, k, objective, remaining,
                                      num_workers, hint, random_seed)
        if found.groups is not None and found.bound is not None:
            unit, slack = _cpsat_unit(objective, fake, points.shape[1])
            bound = max(0.0, (found.bound - slack) * unit)
            return _better(step, points, fake, found.groups, found.status, "cp-sat", bound,
                           hint, hint_value, objective, started)
    if hint is not None:
        detail = (f"{k}^{len(order)} candidate groups above size_limit={size_limit}"
                  if columns is None else "the exact model found nothing in time")
        return _finish(step, points, fake, hint, objective, "HEURISTIC", "hint", None, started,
                       hint_value, detail=detail)
    groups = _round_robin(value_index, fake, points, k)
    return _finish(step, points, fake, groups, objective, "HEURISTIC", "round-robin", None,
                   started)


def _better(
    step: str, points: np.ndarray, fake: np.ndarray, groups: np.ndarray, status: str,
    method: str, bound: float, hint: np.ndarray | None, hint_value: float | None,
    objective: Objective, started: float,
) -> GroupFormation:
    """The model's grouping, or the hint when it is better (rounded codes, early stop);
    the model's bound holds for either."""
    result = _finish(step, points, fake, groups, objective, status, method,
                     None if status == "OPTIMAL" else bound, started, hint_value)
    if hint is None or result.objective <= cast(float, hint_value):
        return result
    return _finish(step, points, fake, hint, objective, "FEASIBLE", "hint", bound, started,
                   hint_value)


def _solve_columns(
    step: str, points: np.ndarray, fake: np.ndarray, columns: Columns, time_limit: float,
    hint: np.ndarray | None, hint_value: float | None, objective: Objective, started: float,
) -> GroupFormation | None:
    found = solve_set_partition(columns, len(fake), time_limit, hint)
    if found.groups is None or found.bound is None:
        return None
    return _better(step, points, fake, found.groups, found.status, "set-partitioning MIP",
                   found.bound, hint, hint_value, objective, started)


def _cpsat_unit(objective: Objective, fake: np.ndarray, d: int) -> tuple[float, float]:
    """Factor from CP-SAT's objective (``Σ_G weight·scaled length``) to the reported one,
    and the most that rounding codes to ``1/CP_SCALE`` can lower it (in CP-SAT units:
    each group length moves by at most ``d``, weighted by the group's rows)."""
    if objective == "perimeter":
        return 1.0 / CP_SCALE, float(len(fake) * d)
    real_rows = int((~fake).sum())
    return 1.0 / (CP_SCALE * max(real_rows * d, 1)), float(real_rows * d)


def _form_pairs(
    step: str, points: np.ndarray, labels: np.ndarray, fake: np.ndarray,
    value_index: np.ndarray, objective: Objective, time_limit: float,
    hint: np.ndarray | None, hint_value: float | None, started: float,
) -> GroupFormation:
    first, second = (np.flatnonzero(value_index == v) for v in (0, 1))
    a_rows, b_rows = first[~fake[first]], second[~fake[second]]
    q = np.rint(np.nan_to_num(points) * SCALE).astype(np.int32)
    hint_partner = None
    if hint is not None:
        b_of_group = {int(hint[i]): j for j, i in enumerate(b_rows.tolist())}
        hint_partner = np.array([b_of_group.get(int(hint[i]), -1) for i in a_rows.tolist()],
                                dtype=np.int64)
    remaining = max(time_limit - (time.perf_counter() - started), 0.01)
    matching = match_pairs(q[a_rows], q[b_rows], len(first) - len(a_rows),
                           len(second) - len(b_rows), remaining, hint_partner)
    groups = np.empty(len(labels), dtype=np.int64)
    paired = matching.partner >= 0
    pairs = int(paired.sum())
    groups[a_rows[paired]] = np.arange(pairs)
    groups[b_rows[matching.partner[paired]]] = np.arange(pairs)
    # The rest pair with counterfeits: real rows of one value with the other's counterfeits.
    lonely_a = a_rows[~paired]
    lonely_b = np.setdiff1d(b_rows, b_rows[matching.partner[paired]])
    fake_a, fake_b = first[fake[first]], second[fake[second]]
    groups[lonely_a] = pairs + np.arange(len(lonely_a))
    groups[fake_b] = pairs + np.arange(len(fake_b))
    offset = pairs + len(lonely_a)
    groups[lonely_b] = offset + np.arange(len(lonely_b))
    groups[fake_a] = offset + np.arange(len(fake_a))
    unit = 2.0 / SCALE if objective == "perimeter" else 2.0 / (
        SCALE * max(int((~fake).sum()) * points.shape[1], 1))
    # Rounding codes to 1/SCALE moves each pair's distance by at most d/SCALE.
    bound = max(0.0, (matching.bound - pairs * points.shape[1]) * unit)
    status = "OPTIMAL" if matching.optimal else "FEASIBLE"
    return _finish(step, points, fake, groups, objective, status, "min-cost flow",
                   None if matching.optimal else bound, started, hint_value,
                   detail=f"{matching.rounds} pricing rounds, {matching.arcs} arcs")


def partition_m_unique(
    codes: np.ndarray,
    values: Sequence[str] | np.ndarray,
    m: int,
    is_counterfeit: np.ndarray | None = None,
    objective: Objective = "perimeter",
    domain: Domain | None = None,
    time_limit: float = 10.0,
    num_workers: int = 1,
    hint_groups: np.ndarray | None = None,
    size_limit: int = 60_000,
) -> GroupFormation:
    """Partition rows into m-unique groups, each holding a real row, with least perimeter
    (or NCP): the first release, or the new rows left over after balancing.

    Exact (set-partitioning MIP) while the candidate groups number at most ``size_limit``;
    above, the valid ``hint_groups`` (the solver passes Assign + split) or, without one,
    the count plan of :func:`republish.bucket_types.plan_m_unique_groups` with rows in
    code order (status ``HEURISTIC``).

    Raises
    ------
    InputError
        if the rows cannot form such groups (not m-eligible, or a value has more rows
        than there are real rows).
    """
    started = time.perf_counter()
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ParameterError(f"m must be a positive integer, got {m!r}.")
    points, labels, fake = _prepare(codes, values, is_counterfeit, domain, objective,
                                    time_limit, num_workers)
    names = sorted(set(labels.tolist()))
    real_counts = {v: int(((labels == v) & ~fake).sum()) for v in names}
    fake_counts = {v: int(((labels == v) & fake).sum()) for v in names}
    plan = plan_m_unique_groups(real_counts, fake_counts, m)  # raises when impossible
    step = "m-unique-partition"
    if len(labels) == 0:
        return _finish(step, points, fake, np.zeros(0, np.int64), objective, "OPTIMAL",
                       "empty", 0.0, started)
    value_index = pd.Index(names).get_indexer(labels)
    hint = None if hint_groups is None else np.asarray(hint_groups, dtype=np.int64)
    if hint is not None and grouping_problems(labels, fake, hint, m):
        hint = None
    hint_value = None if hint is None else grouping_objective(points, fake, hint, objective)
    columns = partition_columns(points, value_index, fake, m, objective, size_limit)
    if columns is not None:
        remaining = max(time_limit - (time.perf_counter() - started), 0.01)
        exact = _solve_columns(step, points, fake, columns, remaining, hint, hint_value,
                               objective, started)
        if exact is not None:
            return exact
    if hint is not None:
        return _finish(step, points, fake, hint, objective, "HEURISTIC", "hint", None,
                       started, hint_value)
    groups = np.empty(len(labels), dtype=np.int64)
    key = np.nan_to_num(points).sum(axis=1)
    for v in names:
        rows = np.flatnonzero(labels == v)
        real_rows = rows[~fake[rows]][np.argsort(key[rows[~fake[rows]]], kind="stable")]
        fake_rows = rows[fake[rows]]
        real_at = [g for g, group in enumerate(plan) if group.get(v) is True]
        fake_at = [g for g, group in enumerate(plan) if group.get(v) is False]
        groups[real_rows] = real_at
        groups[fake_rows] = fake_at
    return _finish(step, points, fake, groups, objective, "HEURISTIC", "count plan", None,
                   started)

