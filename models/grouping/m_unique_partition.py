"""First release and leftover new rows: an m-eligible table into m-unique groups.

The m-invariance paper (Xiao & Tao, SIGMOD 2007) forms the first release's groups with
Assign (§4.2) and splits them by §4.3; here the partition is optimized exactly by a
set-partitioning MIP over the candidate groups of ``m .. 2m-1`` distinct values
(:mod:`republish.models.grouping.mip`) while they are few enough.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from republish.errors import ParameterError
from republish.generalization import Domain
from republish.models.grouping.common import (
    GroupFormation,
    Objective,
    finish_grouping,
    grouping_objective,
    grouping_problems,
    prepare_points,
    solve_columns,
)
from republish.models.grouping.mip import partition_columns
from republish.problems.buckets import plan_m_unique_groups

__all__ = ["partition_m_unique"]


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
    size_limit: int = 250_000,
) -> GroupFormation:
    """Partition rows into m-unique groups, each holding a real row, with least perimeter
    (or NCP): the first release, or the new rows left over after balancing.

    Exact (set-partitioning MIP) while the candidate groups number at most ``size_limit``;
    above, the valid ``hint_groups`` (the solver passes Assign + split) or, without one,
    the count plan of :func:`republish.problems.buckets.plan_m_unique_groups` with rows in
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
    points, labels, fake = prepare_points(codes, values, is_counterfeit, domain, objective,
                                          time_limit, num_workers)
    names = sorted(set(labels.tolist()))
    real_counts = {v: int(((labels == v) & ~fake).sum()) for v in names}
    fake_counts = {v: int(((labels == v) & fake).sum()) for v in names}
    plan = plan_m_unique_groups(real_counts, fake_counts, m)  # raises when impossible
    step = "m-unique-partition"
    if len(labels) == 0:
        return finish_grouping(step, points, fake, np.zeros(0, np.int64), objective, "OPTIMAL",
                               "empty", 0.0, started)
    value_index = pd.Index(names).get_indexer(labels)
    hint = None if hint_groups is None else np.asarray(hint_groups, dtype=np.int64)
    if hint is not None and grouping_problems(labels, fake, hint, m):
        hint = None
    hint_value = None if hint is None else grouping_objective(points, fake, hint, objective)
    columns = partition_columns(points, value_index, fake, m, objective, size_limit)
    if columns is not None:
        remaining = max(time_limit - (time.perf_counter() - started), 0.01)
        exact = solve_columns(step, points, fake, columns, remaining, hint, hint_value,
                              objective, started)
        if exact is not None:
            return exact
    if hint is not None:
        return finish_grouping(step, points, fake, hint, objective, "HEURISTIC", "hint", None,
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
    return finish_grouping(step, points, fake, groups, objective, "HEURISTIC", "count plan", None,
                           started)
