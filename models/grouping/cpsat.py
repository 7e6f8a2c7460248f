"""CP-SAT model for group formation in a balanced bucket of signature size >= 3.

A balanced bucket with ``s`` values and ``k`` rows per value becomes ``k`` groups of one
row per value (m-invariance paper, §4.3). The rows of one *anchor* value (the value with
fewest counterfeits) are fixed to groups ``0..k-1``, which removes the symmetry between
groups; ``y[i, g]`` puts row ``i`` of another value in group ``g`` (one group per row,
one row per value and group). Because each group holds exactly one row of each value,
the per-group QI minima and maxima are linear in ``y``:

    ``low[g, j] <= Σ_{i of v} y[i, g]·q[i, j]``, ``high[g, j] >= Σ_{i of v} y[i, g]·q[i, j]``

for every value ``v`` (counterfeits have no QI values: they take ``q = 1`` in the first
and ``q = 0`` in the second, so they never widen the box). Every group holds a real row.
Objective (codes rounded to ``1 / CP_SCALE``): perimeter ``Σ_g s·Σ_j (high - low)``, or
NCP, which weighs each group by its real rows.

This model needs no enumeration, so it serves buckets whose ``k^s`` candidate groups are
too many for the set-partitioning MIP (:mod:`republish.models.grouping.mip`); its
linear relaxation is weak, so it mostly improves the greedy split it is hinted with.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from ortools.sat.python import cp_model

from republish.models.grouping.mip import ExactGrouping
from republish.models.solve import solve_cp_sat

__all__ = ["CP_SCALE", "solve_bucket_grouping"]

CP_SCALE = 10_000
Objective = Literal["perimeter", "ncp"]


def solve_bucket_grouping(
    points: np.ndarray,
    value_index: np.ndarray,
    counterfeit: np.ndarray,
    k: int,
    objective: Objective,
    time_limit: float,
    num_workers: int,
    hint_groups: np.ndarray | None = None,
    random_seed: int = 0,
) -> ExactGrouping:
    """Exact grouping of a balanced bucket: ``value_index`` in ``0..s-1``, ``k`` rows each.

    The objective and bound are in CP-SAT units ``Σ_G weight(G)·Σ_j (high - low)`` with
    codes scaled by ``CP_SCALE``, ``weight`` being ``|G|`` (perimeter) or the group's real
    rows (NCP)."""
    s = int(value_index.max()) + 1
    d = points.shape[1]
    q = np.rint(np.nan_to_num(points) * CP_SCALE).astype(np.int64)
    rows_of = [np.flatnonzero(value_index == v) for v in range(s)]
    fakes = [int(counterfeit[rows].sum()) for rows in rows_of]
    anchor = int(np.argmin(fakes))
    anchor_rows = rows_of[anchor]

    model = cp_model.CpModel()
    y: dict[tuple[int, int], cp_model.IntVar] = {}
    for v, rows in enumerate(rows_of):
        if v == anchor:
            continue
        for i in rows.tolist():
            for g in range(k):
                y[i, g] = model.new_bool_var(f"y[{i},{g}]")
            model.add_exactly_one(y[i, g] for g in range(k))
        for g in range(k):
            model.add_exactly_one(y[i, g] for i in rows.tolist())
    low = [[model.new_int_var(0, CP_SCALE, f"low[{g},{j}]") for j in range(d)] for g in range(k)]
    high = [[model.new_int_var(0, CP_SCALE, f"high[{g},{j}]") for j in range(d)]
            for g in range(k)]
    length = []
    for g in range(k):
        a = int(anchor_rows[g])
        for j in range(d):
            if not counterfeit[a]:
                model.add(low[g][j] <= int(q[a, j]))
                model.add(high[g][j] >= int(q[a, j]))
            for v, rows in enumerate(rows_of):
                if v == anchor:
                    continue
                model.add(low[g][j] <= sum(
                    y[i, g] * (CP_SCALE if counterfeit[i] else int(q[i, j])) for i in rows.tolist()
                ))
                model.add(high[g][j] >= sum(
                    y[i, g] * (0 if counterfeit[i] else int(q[i, j])) for i in rows.tolist()
                ))
        if counterfeit[a]:
            model.add(sum(y[i, g] for v, rows in enumerate(rows_of) if v != anchor
                          for i in rows.tolist() if not counterfeit[i]) >= 1)
        length.append(sum(high[g][j] - low[g][j] for j in range(d)))
    unweighted = objective == "perimeter" or not counterfeit.any()
    if unweighted:
        # Every group has s rows (all real without counterfeits): the weighted sum is s
        # times the length sum.
        model.minimize(sum(length))
    else:
        # NCP weighs a group by its real rows: (s - counterfeits)·length. The product of a
        # counterfeit's y and the group length is z <= length, z <= M·y; the objective
        # rewards z, so at the optimum z = y·length.
        weighted = []
        for g in range(k):
            a = int(anchor_rows[g])
            span = model.new_int_var(0, d * CP_SCALE, f"span[{g}]")
            model.add(span == length[g])
            rebate = []
            for v, rows in enumerate(rows_of):
                if v == anchor:
                    continue
                for i in rows[counterfeit[rows]].tolist():
                    z = model.new_int_var(0, d * CP_SCALE, f"z[{i},{g}]")
                    model.add(z <= span)
                    model.add(z <= d * CP_SCALE * y[i, g])
                    rebate.append(z)
            weighted.append((s - int(counterfeit[a])) * span - sum(rebate))
        model.minimize(sum(weighted))
    hint = None
    if hint_groups is not None:
        relabel = {int(hint_groups[a]): g for g, a in enumerate(anchor_rows.tolist())}
        hint = [(var, int(relabel.get(int(hint_groups[i]), -1) == g))
                for (i, g), var in y.items()]
    solved = solve_cp_sat(model, time_limit=time_limit, workers=num_workers, seed=random_seed,
                          hint=hint)
    if not solved.found or solved.objective is None:
        return ExactGrouping(None, solved.status, None, None, solved.wall_time_s)
    groups = np.empty(len(value_index), dtype=np.int64)
    groups[anchor_rows] = np.arange(k)
    for (i, g), var in y.items():
        if solved.bool_value(var):
            groups[i] = g
    factor = s if unweighted else 1
    bound = None if solved.bound is None else factor * solved.bound
    return ExactGrouping(groups, solved.status, factor * solved.objective, bound,
                         solved.wall_time_s)
