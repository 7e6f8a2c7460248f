"""Set-partitioning MIP for group formation (buckets of signature size >= 3, m-unique
partitions of small tables), solved with SCIP through OR-Tools' model builder.

Every candidate group ``G`` is a column with cost ``weight(G) · Σ_j length_j(G)`` (lengths
over its real rows; ``weight`` is ``|G|`` for the perimeter, ``real(G) / (real rows · d)``
for NCP); the model picks columns covering every row exactly once:

    minimize ``Σ_G cost_G · x_G``  subject to  ``Σ_{G ∋ i} x_G = 1`` for every row ``i``.

* Bucket with ``s`` values and ``k`` rows each: the ``k^s`` tuples of one row per value
  that hold a real row (3-dimensional matching for ``s = 3``).
* m-unique partition: groups of distinct values with ``m .. 2m-1`` rows and a real row.
  Larger groups are dominated: a group of ``>= 2m`` distinct values with two real rows
  splits into two valid groups whose boxes lie inside its box, so neither objective
  grows; a group with a single real row has length 0 and is kept at any size.

Its linear relaxation is close to the optimum on the instances measured (Adult buckets:
often equal), so SCIP's branch-and-bound proves optimality in seconds where CP-SAT --
on this model or on the per-group minima/maxima model of
:mod:`republish.models.grouping.cpsat` -- stalls at buckets of 60 rows
(``benchmarks/RESULTS.md``); CP-SAT stays the fallback for buckets with too many columns.
With many columns the MIP is solved by *price-and-fix*: the relaxation over every column,
a restricted MIP over the columns of smallest reduced cost for an incumbent, then
reduced-cost fixing (Nemhauser & Wolsey, *Integer and Combinatorial Optimization*, 1988,
§II.2) leaves a few hundred columns to SCIP.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from ortools.linear_solver.python import model_builder

from republish.certificate import Certificate, SolveStatus
from republish.models.solve import certificate, solve_mip

__all__ = [
    "MIP_SECONDS_PER_COLUMN",
    "PRUNE_COLUMNS",
    "Columns",
    "ExactGrouping",
    "bucket_columns",
    "partition_columns",
    "solve_set_partition",
]

Objective = str


@dataclass(frozen=True)
class Columns:
    """Candidate groups: column ``c`` holds rows ``members[starts[c]:starts[c + 1]]``."""

    members: np.ndarray
    starts: np.ndarray
    cost: np.ndarray

    def __len__(self) -> int:
        return len(self.cost)


@dataclass(frozen=True)
class ExactGrouping:
    """What a grouping model answers (the set-partitioning MIP here, the CP-SAT model of
    :mod:`republish.models.grouping.cpsat`): a group label per row (``None`` without a
    solution), the solve's status, and objective and bound in the model's units."""

    groups: np.ndarray | None
    status: SolveStatus
    objective: float | None
    bound: float | None
    wall_time_s: float = 0.0

    @property
    def certificate(self) -> Certificate:
        return certificate("grouping-model", self.status, self.objective, self.bound,
                           times={"model": self.wall_time_s})


def _costs(points: np.ndarray, fake: np.ndarray, members: np.ndarray, starts: np.ndarray,
           objective: Objective) -> np.ndarray:
    """Cost of every column (see the module docstring)."""
    real = ~fake[members]
    low = np.where(real[:, None], points[members], np.inf)
    high = np.where(real[:, None], points[members], -np.inf)
    first = starts[:-1]
    length = (np.maximum.reduceat(high, first, axis=0)
              - np.minimum.reduceat(low, first, axis=0)).sum(axis=1)
    if objective == "perimeter":
        return np.diff(starts) * length
    real_rows = max(int((~fake).sum()) * points.shape[1], 1)
    return np.add.reduceat(real.astype(np.int64), first) * length / real_rows


def bucket_columns(points: np.ndarray, value_index: np.ndarray, fake: np.ndarray, k: int,
                   objective: Objective, max_columns: int) -> Columns | None:
    """The ``k^s`` one-row-per-value tuples holding a real row; ``None`` above the limit."""
    s = int(value_index.max()) + 1
    if k ** s > max_columns:
        return None
    rows = [np.flatnonzero(value_index == v) for v in range(s)]
    tuples = np.stack([g.ravel() for g in np.meshgrid(*rows, indexing="ij")], axis=1)
    tuples = tuples[~fake[tuples].all(axis=1)]
    starts = np.arange(len(tuples) + 1) * s
    members = tuples.ravel()
    return Columns(members, starts, _costs(points, fake, members, starts, objective))


def partition_columns(points: np.ndarray, value_index: np.ndarray, fake: np.ndarray, m: int,
                      objective: Objective, max_columns: int) -> Columns | None:
    """Undominated m-unique groups (see the module docstring); ``None`` above the limit."""
    n = len(value_index)
    found: list[tuple[int, ...]] = []
    values = value_index.tolist()
    is_fake = fake.tolist()

    def extend(group: list[int], used: set[int], reals: int, start: int) -> bool:
        size = len(group)
        if size >= m and reals >= 1:
            found.append(tuple(group))
            if len(found) > max_columns:
                return False
        if size >= 2 * m - 1 and reals >= 2:
            return True  # every extension is dominated
        for i in range(start, n):
            if values[i] in used:
                continue
            real = 0 if is_fake[i] else 1
            if size + 1 >= 2 * m and reals + real >= 2:
                continue
            group.append(i)
            used.add(values[i])
            ok = extend(group, used, reals + real, i + 1)
            group.pop()
            used.discard(values[i])
            if not ok:
                return False
        return True

    if not extend([], set(), 0, 0):
        return None
    sizes = np.array([len(g) for g in found], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    members = np.fromiter((i for g in found for i in g), dtype=np.int64, count=int(sizes.sum()))
    return Columns(members, starts, _costs(points, fake, members, starts, objective))


#: Seconds per column to enumerate, build and solve (price-and-fix) a bucket's MIP,
#: measured: 5.2 s for the 248,832 columns of a 60-row bucket of signature size 5.
MIP_SECONDS_PER_COLUMN = 2.1e-5
#: Above this many columns the MIP is solved by price-and-fix (see solve_set_partition).
PRUNE_COLUMNS = 20_000
#: Columns of smallest reduced cost in the restricted MIP of price-and-fix (per row).
RESTRICTED_PER_ROW = 50


def _partition_model(columns: Columns, n: int) -> tuple[model_builder.Model, list[Any]]:
    """``minimize Σ cost_G·x_G`` subject to every row covered exactly once."""
    model = model_builder.Model()
    x = [model.new_bool_var(f"x[{c}]") for c in range(len(columns))]
    column_of = np.repeat(np.arange(len(columns)), np.diff(columns.starts))
    order = np.argsort(columns.members, kind="stable")
    first = np.searchsorted(columns.members[order], np.arange(n + 1))
    for i in range(n):
        covering = column_of[order[first[i]:first[i + 1]]].tolist()
        model.add(model_builder.LinearExpr.sum([x[c] for c in covering]) == 1)
    model.minimize(model_builder.LinearExpr.weighted_sum(x, columns.cost.tolist()))
    return model, x


def _hint_columns(columns: Columns, hint_groups: np.ndarray) -> list[int] | None:
    """The columns of a grouping, or None when one of its groups is no column."""
    index = {tuple(sorted(columns.members[a:b].tolist())): c
             for c, (a, b) in enumerate(zip(columns.starts[:-1], columns.starts[1:],
                                            strict=True))}
    found = [index.get(tuple(np.flatnonzero(hint_groups == label).tolist()))
             for label in np.unique(hint_groups).tolist()]
    return None if any(c is None for c in found) else [int(c) for c in found if c is not None]


def _subset(columns: Columns, keep: np.ndarray) -> Columns:
    sizes = np.diff(columns.starts)[keep]
    members = np.concatenate([columns.members[columns.starts[c]:columns.starts[c + 1]]
                              for c in keep.tolist()]) if len(keep) else np.zeros(0, np.int64)
    return Columns(members, np.concatenate([[0], np.cumsum(sizes)]), columns.cost[keep])


def _scip(columns: Columns, n: int, time_limit: float, hint: list[int] | None
          ) -> tuple[SolveStatus, list[int] | None, float | None, float | None]:
    """SCIP on ``columns``: status, chosen columns, objective and bound."""
    model, x = _partition_model(columns, n)
    solved = solve_mip(model, time_limit=max(float(time_limit), 0.01), solver="scip",
                       parameters="limits/gap = 0\nlimits/absgap = 1e-9\n",
                       hint=[(x[column], 1.0) for column in hint or []])
    if not solved.found:
        return solved.status, None, None, None
    chosen = np.flatnonzero(solved.values(x) > 0.5).tolist()
    return solved.status, chosen, solved.objective, solved.bound


def _price_and_fix(columns: Columns, n: int, time_limit: float, hint: list[int] | None
                   ) -> tuple[SolveStatus, list[int] | None, float | None, float | None] | None:
    """Many columns: the linear relaxation over all of them (value ``z``, reduced costs
    ``rc``), a restricted MIP over the columns of smallest ``rc`` for an incumbent of cost
    ``UB``, then reduced-cost fixing -- a column with ``rc > UB - z`` is in no solution
    cheaper than ``UB`` -- and SCIP on the few columns left. The optimum and bound are
    those of the full problem. None when the relaxation does not finish."""
    started = time.perf_counter()
    model, x = _partition_model(columns, n)
    relaxation = solve_mip(model, time_limit=max(float(time_limit) / 2, 0.01), solver="glop")
    if relaxation.status != "OPTIMAL" or relaxation.objective is None:
        return None
    relaxed = relaxation.objective
    reduced = relaxation.reduced_costs(x)
    tolerance = 1e-7 * max(1.0, abs(relaxed))
    pool = np.argsort(reduced, kind="stable")[: RESTRICTED_PER_ROW * n]
    pool = np.union1d(pool, np.asarray(hint or [], dtype=np.int64))
    left = time_limit - (time.perf_counter() - started)
    status, chosen, value, _ = _scip(_subset(columns, pool), n, left / 2,
                                     _positions(pool, hint))
    incumbent = None if chosen is None else [int(pool[c]) for c in chosen]
    upper = value
    if hint is not None and (upper is None or float(columns.cost[hint].sum()) < upper):
        incumbent, upper = hint, float(columns.cost[hint].sum())
    if upper is None or incumbent is None:
        return None
    if upper - relaxed <= tolerance:
        return "OPTIMAL", incumbent, upper, upper
    keep = np.union1d(np.flatnonzero(reduced <= upper - relaxed + tolerance),
                      np.asarray(incumbent, dtype=np.int64))
    left = time_limit - (time.perf_counter() - started)
    status, chosen, value, bound = _scip(_subset(columns, keep), n, left,
                                         _positions(keep, incumbent))
    if chosen is None or value is None or value > upper + tolerance:
        return "FEASIBLE", incumbent, upper, relaxed
    return status, [int(keep[c]) for c in chosen], value, max(relaxed, bound or relaxed)


def _positions(kept: np.ndarray, columns: list[int] | None) -> list[int] | None:
    if columns is None:
        return None
    where = np.searchsorted(kept, np.asarray(columns, dtype=np.int64))
    return where.tolist()


def solve_set_partition(columns: Columns, n: int, time_limit: float,
                        hint_groups: np.ndarray | None = None) -> ExactGrouping:
    """Cover rows ``0..n-1`` exactly once at least cost (SCIP, relative gap 0); above
    :data:`PRUNE_COLUMNS` columns by price-and-fix (:func:`_price_and_fix`)."""
    started = time.perf_counter()
    hint = None if hint_groups is None else _hint_columns(columns, hint_groups)
    found = None
    if len(columns) > PRUNE_COLUMNS:
        found = _price_and_fix(columns, n, time_limit, hint)
    if found is None:
        found = _scip(columns, n, time_limit - (time.perf_counter() - started), hint)
    status, chosen, value, bound = found
    wall = time.perf_counter() - started
    if chosen is None or value is None:
        return ExactGrouping(None, status, None, None, wall)
    groups = np.full(n, -1, dtype=np.int64)
    for label, c in enumerate(chosen):
        groups[columns.members[columns.starts[c]:columns.starts[c + 1]]] = label
    if (groups < 0).any():
        return ExactGrouping(None, "ERROR", None, None, wall)
    return ExactGrouping(groups, status, value, bound, wall)
