"""Group formation: split a balanced bucket into groups of one row per signature value, or
an m-eligible table into m-unique groups, with the least generalization.

The m-invariance paper (Xiao & Tao, SIGMOD 2007, §4.3) halves balanced buckets greedily
by the minimum perimeter-sum scheme; here the same partition is optimized exactly
(design notes, "Optimization view"):

* signature size 2: a minimum-cost perfect matching, solved exactly at any size
  (:mod:`republish.models.grouping.pairs`: min-cost flow on candidate arcs,
  priced with a dual certificate);
* signature size >= 3 (3-dimensional matching, NP-hard): a set-partitioning MIP over the
  ``k^s`` candidate groups (:mod:`republish.models.grouping.mip`, SCIP) while they
  number at most ``size_limit``; else CP-SAT with per-group QI minima and maxima
  (:mod:`republish.models.grouping.cpsat`) hinted with the greedy split for
  buckets of at most ``cpsat_rows`` rows; beyond, the hint (or a round-robin grouping).
  Whatever is not proven optimal gets, time permitting, the bound of three exact
  pairings (:mod:`republish.models.grouping.bound`), so its gap says how far from
  optimal it may be;
* :func:`partition_m_unique` (first release, leftover new rows;
  :mod:`republish.models.grouping.m_unique_partition`): the set-partitioning MIP while its
  candidate groups number at most ``size_limit``, else the hint (the solver passes
  Assign + split).

Costs. Rows are QI codes normalized to [0, 1] per QI (pass a :class:`Domain` to normalize
raw codes); a group's length on QI ``j`` is ``max - min`` over its *real* rows. Counterfeits
have no QI values: they take the group's box, so they add nothing to its lengths but
count in ``|G|``. Objectives: ``perimeter`` = ``Σ_G |G| · Σ_j length_j`` (§4.3) and
``ncp`` = ``Σ_G real(G) · Σ_j length_j / (real rows · d)``. Hierarchy QIs are measured by
their leaf-code range here (the published LCA label may cover more leaves).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from republish.errors import InputError
from republish.generalization import Domain
from republish.models.grouping.bound import pairing_lower_bound
from republish.models.grouping.common import (
    GroupFormation,
    Objective,
    better_grouping,
    finish_grouping,
    grouping_objective,
    grouping_problems,
    prepare_points,
    solve_columns,
)
from republish.models.grouping.cpsat import CP_SCALE, solve_bucket_grouping
from republish.models.grouping.m_unique_partition import partition_m_unique
from republish.models.grouping.mip import MIP_SECONDS_PER_COLUMN, bucket_columns
from republish.models.grouping.pairs import (
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
    size_limit: int = 250_000,
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
    points, labels, fake = prepare_points(codes, values, is_counterfeit, domain, objective,
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
        return finish_grouping(step, points, fake, np.zeros(0, np.int64), objective, "OPTIMAL",
                               "empty", 0.0, started)
    if len(order) == 1:
        return finish_grouping(step, points, fake, np.arange(len(labels)), objective, "OPTIMAL",
                               "singletons", None, started)
    if len(order) == 2:
        first_round = FIRST_ROUND_SECONDS_PER_ROW * len(labels)
        if hint is not None and time_limit - (time.perf_counter() - started) < first_round:
            detail = f"less time left than the first round (~{first_round:.2g} s)"
            return finish_grouping(step, points, fake, hint, objective, "HEURISTIC", "hint", None,
                                   started, hint_value, detail=detail)
        return _form_pairs(step, points, labels, fake, value_index, objective, time_limit,
                           hint, hint_value, started)
    found = _form_larger(step, points, fake, value_index, k, objective, time_limit,
                         num_workers, hint, hint_value, size_limit, cpsat_rows, random_seed,
                         started)
    return _with_pairing_bound(found, points, value_index, fake, objective,
                               time_limit - (time.perf_counter() - started))


def _form_larger(
    step: str, points: np.ndarray, fake: np.ndarray, value_index: np.ndarray, k: int,
    objective: Objective, time_limit: float, num_workers: int, hint: np.ndarray | None,
    hint_value: float | None, size_limit: int, cpsat_rows: int, random_seed: int,
    started: float,
) -> GroupFormation:
    """Signature size >= 3: the MIP, else CP-SAT, else the hint (or a round-robin)."""
    s = int(value_index.max()) + 1
    remaining = max(time_limit - (time.perf_counter() - started), 0.01)
    # Enumerating and building the model cannot be interrupted: a bucket whose columns
    # would take longer than the time left is not enumerated at all.
    affordable = int(remaining / MIP_SECONDS_PER_COLUMN)
    columns = bucket_columns(points, value_index, fake, k, objective,
                             min(size_limit, affordable))
    if columns is not None:
        exact = solve_columns(step, points, fake, columns, remaining, hint, hint_value,
                              objective, started)
        if exact is not None:
            return exact
    elif len(value_index) <= cpsat_rows:
        found = solve_bucket_grouping(points, value_index, fake, k, objective, remaining,
                                      num_workers, hint, random_seed)
        if found.groups is not None:
            unit, slack = _cpsat_unit(objective, fake, points.shape[1])
            bound = max(0.0, ((found.bound or 0.0) - slack) * unit)
            return better_grouping(step, points, fake, found.groups, found.status, "cp-sat",
                                   bound, hint, hint_value, objective, started)
    if hint is not None:
        detail = (f"{k}^{s} candidate groups above size_limit={size_limit} or the "
                  f"{affordable} the time left affords"
                  if columns is None else "the exact model found nothing in time")
        return finish_grouping(step, points, fake, hint, objective, "HEURISTIC", "hint", None,
                               started, hint_value, detail=detail)
    groups = _round_robin(value_index, fake, points, k)
    return finish_grouping(step, points, fake, groups, objective, "HEURISTIC", "round-robin",
                           None, started)


def _with_pairing_bound(
    found: GroupFormation, points: np.ndarray, value_index: np.ndarray, fake: np.ndarray,
    objective: Objective, time_left: float,
) -> GroupFormation:
    """Raise the bound of an unproven grouping to the pairing bound
    (:mod:`republish.models.grouping.bound`) when time is left to compute it."""
    if found.status == "OPTIMAL" or time_left <= 0:
        return found
    bound = pairing_lower_bound(points, value_index, fake, objective, time_left)
    if bound is None or (found.bound is not None and bound <= found.bound):
        return found
    bound = min(bound, found.objective)
    detail = "; ".join(part for part in (found.certificate.detail, "pairing bound") if part)
    certificate = dataclasses.replace(found.certificate, bound=bound, detail=detail)
    return dataclasses.replace(found, bound=bound, certificate=certificate)


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
    return finish_grouping(step, points, fake, groups, objective, status, "min-cost flow",
                           None if matching.optimal else bound, started, hint_value,
                           detail=f"{matching.rounds} pricing rounds, {matching.arcs} arcs")
