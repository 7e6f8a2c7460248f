"""Bounds and columns for the whole-release model of :mod:`republish.models.whole_release`.

* **(a) exactly, by a count model** (:func:`optimal_counts`). Objective (a) = counterfeits +
  w·deferrals depends only on how many new rows of each value join each bucket, how many
  are deferred and how many groups each bucket forms (m-invariance, Xiao & Tao 2007,
  §4.1-4.2: balancing and assignment count rows). With ``k[b,v]`` old rows of value ``v`` in
  bucket ``b`` (``K_b = max_v k[b,v]``, ``o_b`` rows, signature size ``s_b``), ``N_v`` new
  rows of value ``v`` and ``w = p/q``::

      minimize   q·C + p·D
      subject to K_b <= g_b <= o_b                   (groups of bucket b; each holds an old row)
                 0 <= x[b,v] <= g_b - k[b,v]         (new rows of v filling bucket b)
                 y_v = N_v - Σ_b x[b,v] - d_v >= 0   (new rows left for new groups)
                 c_new >= m·y_v - Σ_u y_u  ∀v,  c_new >= 0   (m·y_v <= Σ_u y_u when
                                                     counterfeits in new groups are forbidden)
                 C = Σ_b (s_b·g_b - o_b - Σ_v x[b,v]) + c_new,   D = Σ_v d_v.

  Exact: any release yields such counts with at least the model's (a) (new groups holding
  ``y`` rows number ``>= max_v y_v`` and have ``>= m`` slots each), and every count solution
  is realized by :func:`republish.models.whole_release_counts.realize_counts`.
* **Columns** of the set-partitioning model (:func:`families`, :func:`enumerate_columns`),
  with pricing: only columns of reduced cost ``<= θ`` under given duals.
* **The LP relaxation** (:func:`relax`): a dual bound valid whatever the LP's accuracy.
* **(b) given (a) at its optimum, by a cycle-cover assignment** (:func:`whole_release_bound`).

Pair extents come from ``extent.pairwise(rows_a, rows_b)`` when the extent has it (the
default :class:`BoxExtent` does); otherwise one call per pair.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from ortools.graph.python import min_cost_flow
from ortools.linear_solver.python import model_builder

from republish.models.whole_release_counts import (
    BoxExtent,
    CountPlan,
    Extent,
    Family,
    ReleaseCounts,
    count_columns,
    families,
    optimal_counts,
    rational_weight,
)
from republish.models.whole_release_enumeration import enumerate_columns
from republish.models.whole_release_pair_bound import lower_bound_b

if TYPE_CHECKING:
    from republish.models.whole_release import WholeReleaseProblem

__all__ = [
    "BoxExtent",
    "CountPlan",
    "Extent",
    "Family",
    "Master",
    "Relaxation",
    "ReleaseCounts",
    "WholeReleaseBound",
    "count_columns",
    "enumerate_columns",
    "families",
    "optimal_counts",
    "partition_model",
    "rational_weight",
    "reduced_costs",
    "relax",
    "whole_release_bound",
]

@dataclass(frozen=True)
class Master:
    """Column ``c`` covers ``members[c]`` (``-1`` pads), costs ``cost[c]`` and uses
    ``a_coef[c]`` of the (a) row ``<= rhs``; row ``i`` is covered exactly once where
    ``exact[i]``, at most once elsewhere; ``row_a[i]``: row i's part of every ``a_coef``
    (``-p`` new, 0 old); ``radius[i]``: every column of row ``i`` with box extent
    ``<= radius[i]`` is present (``inf``: all of them)."""

    members: np.ndarray
    cost: np.ndarray
    a_coef: np.ndarray
    rhs: int
    exact: np.ndarray
    row_a: np.ndarray
    radius: np.ndarray


def partition_model(master: Master, keep: np.ndarray, integral: bool = True
                    ) -> tuple[model_builder.Model, list[Any], list[Any], Any]:
    """The set-partitioning model over the columns ``keep``: model, ``x`` (binary, or
    ``>= 0`` without ``integral``), the cover rows and the (a) row.

    The relaxation leaves ``x <= 1`` out: every column covers a row, so its cover row
    implies it, and without the bound no column of the LP's optimum has a negative reduced
    cost (at ``x = 1`` one could), which a pricing round's bound would count twice."""
    model = model_builder.Model()
    x = [model.new_bool_var(f"x[{c}]") if integral else model.new_var(0.0, math.inf, False,
                                                                      None)
         for c in keep.tolist()]
    sub = master.members[keep]
    column, slot = np.nonzero(sub >= 0)
    row = sub[column, slot]
    order = np.argsort(row, kind="stable")
    starts = np.searchsorted(row[order], np.arange(len(master.exact) + 1))
    covers = []
    for i in range(len(master.exact)):
        covering = model_builder.LinearExpr.sum(
            [x[c] for c in column[order[starts[i]:starts[i + 1]]].tolist()])
        covers.append(model.add(covering == 1 if master.exact[i] else covering <= 1))
    spent = model.add(model_builder.LinearExpr.weighted_sum(x, master.a_coef[keep].tolist())
                      <= master.rhs)
    model.minimize(model_builder.LinearExpr.weighted_sum(x, master.cost[keep].tolist()))
    return model, x, covers, spent


@dataclass(frozen=True)
class Relaxation:
    """Duals ``y`` (rows), ``y_a`` ((a) row), prices ``pi = y + y_a·row_a``, reduced costs
    ``rc``, the LP solution ``x``; ``bound`` over the present columns, ``bound_radius`` over
    all columns (valid for the box extent); ``sigma``: the duals (``<= 0``) of the cuts of
    an :class:`~republish.models.whole_release_master.IncrementalMaster`, already in ``rc``
    and ``bound``."""

    y: np.ndarray
    y_a: float
    pi: np.ndarray
    rc: np.ndarray
    x: np.ndarray
    bound: float
    bound_radius: float
    sigma: np.ndarray = field(default_factory=lambda: np.zeros(0))


def reduced_costs(members: np.ndarray, cost: np.ndarray, a_coef: np.ndarray, y: np.ndarray,
                  y_a: float) -> np.ndarray:
    """``rc = cost - Σ_{i∈R} y_i - y_a·a_coef`` of the given columns."""
    used = members >= 0
    return cost - np.where(used, y[np.maximum(members, 0)], 0.0).sum(axis=1) - y_a * a_coef


def relax(master: Master, time_limit: float) -> Relaxation | None:
    """The linear relaxation (GLOP, dual simplex) and its dual bounds.

    With duals ``y`` (sign-corrected: ``<= 0`` on ``<=`` rows) and ``rc = cost - Aᵀy``, every
    ``x ∈ [0,1]`` meeting the constraints has ``cost·x >= yᵀb + rc·x >= D + rc_c·x_c`` for any
    ``rc_c >= 0``, where ``D = yᵀb + Σ_c min(rc_c, 0)``: weak duality, whatever the LP's
    accuracy (``rc`` is recomputed here). A missing column has box extent ``> r``, so
    ``rc >= |σ|·r - Σ_{i∈R} pi_i >= Σ_{i∈R} (r - pi_i)`` (``-y_a·q·cf >= 0`` dropped); each row
    is covered at most once, hence over all columns ``D + Σ_i min(0, r_i - pi_i)``."""
    model, x, covers, spent = partition_model(master, np.arange(len(master.cost)))
    solver = model_builder.Solver("glop")
    solver.set_time_limit_in_seconds(max(time_limit, 0.01))
    solver.set_solver_specific_parameters("use_dual_simplex: true")  # 10x primal, measured
    if solver.solve(model) != model_builder.SolveStatus.OPTIMAL:
        return None
    y = np.asarray(solver.dual_values(covers), dtype=np.float64)
    y = np.where(master.exact, y, np.minimum(y, 0.0))
    y_a = min(float(solver.dual_value(spent)), 0.0)
    rc = reduced_costs(master.members, master.cost, master.a_coef, y, y_a)
    bound = float(y.sum() + y_a * master.rhs + np.minimum(rc, 0.0).sum())
    pi = y + y_a * master.row_a
    missing = float(np.minimum(0.0, master.radius - pi).sum())
    return Relaxation(y, y_a, pi, rc, np.asarray(solver.values(x), dtype=np.float64), bound,
                      bound + missing)


# --- (b) bound by a cycle-cover assignment ---------------------------------------------------

@dataclass(frozen=True)
class WholeReleaseBound:
    """Lower bounds: ``objective_a`` on (a); ``objective_b`` on (b) over the releases whose
    (a) is optimal. ``status_a`` is the count model's status (``OPTIMAL``: (a) is exact)."""

    objective_a: float
    status_a: str
    objective_b: float
    budget: float
    wall_time_s: float


def _pair_extents(extent: Extent, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    pairwise = getattr(extent, "pairwise", None)
    if pairwise is not None:
        return np.asarray(pairwise(rows_a, rows_b), dtype=np.float64)
    return np.array([[extent(np.array([i, j])) for j in rows_b.tolist()]
                     for i in rows_a.tolist()], dtype=np.float64).reshape(len(rows_a), -1)


def partners(problem: WholeReleaseProblem, extent: Extent, k: int = 12, block: int = 256,
             deadline: float = math.inf
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Per row ``i``: ``δ_i``, the least extent of a group holding ``i`` and another real row;
    its ``k`` nearest compatible rows (``-1`` pads) and their pair extents; the ``(k+1)``-th
    smallest pair extent (``inf`` if none).

    ``i``'s group is a group of bucket ``b`` (``i`` old of ``b``: a partner among old rows of
    ``b`` and new rows of ``σ_b``; ``i`` new, ``v_i ∈ σ_b``: it holds an old row of ``b``) or
    a new group (``i`` new: a new partner; without counterfeits in new groups ``max(1, m-1)``
    new partners of distinct values, so the ``(m-1)``-th smallest per-value nearest).
    None past ``deadline`` (``time.perf_counter()`` seconds)."""
    counts = ReleaseCounts.of(problem)
    n, values, bucket, new = len(problem.values), problem.values, problem.bucket, counts.is_new
    sig = np.vstack([counts.in_signature, np.zeros((1, problem.domain_size), bool)])
    need = max(1, problem.m - 1) if not problem.counterfeits_in_new_groups else 1
    by_value = [np.flatnonzero(new & (values == u)) for u in range(problem.domain_size)]
    delta, far = np.full(n, np.inf), np.full(n, np.inf)
    near, near_cost = np.full((n, k), -1), np.full((n, k), np.inf)
    everything = np.arange(n)
    for start in range(0, n, block):
        if time.perf_counter() > deadline:
            return None
        rows = everything[start:start + block]
        dist = _pair_extents(extent, rows, everything)
        other = values[rows][:, None] != values[None, :]
        old_i = ~new[rows]
        mine = (bucket[rows][:, None] == bucket[None, :]) & ~new[None, :]
        mine |= sig[bucket[rows]][:, values] & new[None, :]  # (-1 picks the False row)
        theirs = sig[bucket][:, values[rows]].T & ~new[None, :]
        bucket_ok = other & np.where(old_i[:, None], mine, theirs)
        best = np.where(bucket_ok, dist, np.inf).min(axis=1)
        new_ok = other & new[None, :] & new[rows][:, None]
        if problem.counterfeits_in_new_groups:
            best = np.minimum(best, np.where(new_ok, dist, np.inf).min(axis=1))
        elif need <= problem.domain_size:
            nearest = np.full((len(rows), problem.domain_size), np.inf)
            for u, cols in enumerate(by_value):
                if len(cols):
                    nearest[:, u] = dist[:, cols].min(axis=1)
            nearest[np.arange(len(rows)), values[rows]] = np.inf
            nearest[old_i] = np.inf
            best = np.minimum(best, np.sort(nearest, axis=1)[:, need - 1])
        delta[rows] = best
        masked = np.where(bucket_ok | new_ok, dist, np.inf)
        take = min(k + 1, n)
        order = np.argsort(masked, axis=1, kind="stable")[:, :take]
        chosen = np.take_along_axis(masked, order, axis=1)
        near[rows, :min(k, take)] = np.where(np.isfinite(chosen[:, :k]), order[:, :k], -1)
        near_cost[rows, :min(k, take)] = chosen[:, :k]
        if take == k + 1:
            far[rows] = chosen[:, k]
    return delta, near, near_cost, far


#: Above this many rows the cycle-cover bound is not computed (on Adult it proved 0 at
#: 5,000 rows after the whole budget, and took 2.3 s of a 10 s first release of 2,000 rows,
#: overrunning it by 1.1 s); the row bound is. Measured on Adult first and second
#: releases of 200 and 1,000 rows (m = 3, 4) it stayed below the row bound each time.
CYCLE_COVER_ROWS = 1_000


def _alone_weights(problem: WholeReleaseProblem, weight: Fraction) -> np.ndarray:
    """Least (a) a row adds when it sits alone or is deferred (``inf`` if it cannot)."""
    counts = ReleaseCounts.of(problem)
    sizes = np.append(counts.signature_size, 1)[problem.bucket] - 1
    alone_new = (problem.m - 1) if (problem.counterfeits_in_new_groups or problem.m == 1) \
        else np.inf
    new_weight = min(alone_new, float(weight) if problem.allow_deferrals else np.inf)
    return np.where(problem.bucket >= 0, sizes.astype(np.float64), new_weight)


def cycle_cover_bound(problem: WholeReleaseProblem, extent: Extent | None, budget: float,
                      weight: Fraction, scale: float = 1e6, deadline: float = math.inf
                      ) -> float:
    """The bound of :func:`whole_release_bound` for a budget ``>= A*`` (0 when the pair
    extents are not all computed by ``deadline``; the search stops there too)."""
    n = len(problem.values)
    if n == 0 or not np.isfinite(budget):
        return 0.0
    found = partners(problem, extent or BoxExtent(problem.points), deadline=deadline)
    if found is None:
        return 0.0
    delta, near, near_cost, far = found
    alone = _alone_weights(problem, weight)
    tail = np.repeat(np.arange(n), near.shape[1])
    head, cost = near.ravel(), np.maximum(near_cost, delta[:, None]).ravel()
    keep = (head >= 0) & np.isfinite(cost)  # δ_i = inf: row i can only be alone
    tail, head, cost = tail[keep], head[keep], cost[keep]
    hub_rows = np.flatnonzero(np.isfinite(np.maximum(far, delta)))
    alone_rows = np.flatnonzero(np.isfinite(alone))

    def lagrangian(lam: float) -> float:
        """min over permutations (cycles = partners, fixed points = alone) - λ·budget."""
        flow = min_cost_flow.SimpleMinCostFlow()
        hub = 2 * n
        tails = np.concatenate([tail, hub_rows, np.full(n, hub), alone_rows])
        heads = np.concatenate([n + head, np.full(len(hub_rows), hub), n + np.arange(n),
                                n + alone_rows])
        costs = np.concatenate([cost, np.maximum(far[hub_rows], delta[hub_rows]),
                                np.zeros(n), lam * alone[alone_rows]])
        flow.add_arcs_with_capacity_and_unit_cost(
            tails.astype(np.int32), heads.astype(np.int32), np.ones(len(tails), np.int64),
            np.floor(costs * scale).astype(np.int64))  # rounded down: still a lower bound
        flow.set_nodes_supplies(np.arange(2 * n + 1, dtype=np.int32),
                                np.concatenate([np.ones(n), -np.ones(n), [0]]).astype(np.int64))
        if flow.solve() != flow.OPTIMAL:
            return -math.inf
        return flow.optimal_cost() / scale - lam * budget

    positive = alone[np.isfinite(alone) & (alone > 0)]
    top = (float(cost.max(initial=0.0)) + float(np.nan_to_num(far, posinf=0).max(initial=0.0))
           ) / (float(positive.min()) if len(positive) else 1.0) + 1.0
    low, high = 0.0, top
    best = max(lagrangian(0.0), lagrangian(top))
    for _ in range(25):  # golden-section search on the concave dual function
        if time.perf_counter() > deadline:
            break
        a, b = high - 0.618 * (high - low), low + 0.618 * (high - low)
        fa, fb = lagrangian(a), lagrangian(b)
        best = max(best, fa, fb)
        if fa < fb:
            low = a
        else:
            high = b
    return max(0.0, best)


def whole_release_bound(problem: WholeReleaseProblem, *, extent: Extent | None = None,
                        budget: float | None = None, time_limit: float = 10.0,
                        workers: int = 1, seed: int = 0) -> WholeReleaseBound:
    """(a) exactly (count model) and a lower bound on (b) over the releases of optimal (a).

    Validity. Take such a release; order each group's real rows ``R`` in a cycle, so every
    row in a group of ``>= 2`` real rows has a successor ``p(i) ≠ i`` in its group, and let
    the other rows (alone or deferred) be fixed points: a permutation. A group costs
    ``|σ|·extent(R) >= Σ_{i∈R} extent(R) >= Σ_{i∈R} max(extent({i,p(i)}), δ_i)`` (``|σ| >=
    |R|``, monotone extent, :func:`partners`), and the fixed points' (a) weights (``s_b - 1``,
    ``>= m - 1`` or ``w``) add up to at most ``A* <= budget``. So for every ``λ >= 0``,
    ``(b) >= min over permutations of [Σ arc costs + λ·Σ fixed-point weights] - λ·budget``,
    a min-cost assignment; arcs beyond a row's ``k`` nearest go through a hub at the
    ``(k+1)``-th smallest cost, which only lowers the minimum. The larger of this bound (up
    to ``CYCLE_COVER_ROWS`` rows), the row and capacity bound of
    :func:`republish.models.whole_release_row_bound.row_bound` and the pair bound of
    :func:`republish.models.whole_release_pair_bound.pair_bound` is returned. ``budget``
    defaults to the count model's value (A* when its status is OPTIMAL). ``time_limit``
    bounds the whole call (the cycle-cover part is 0 when the pair extents are not done by
    then; the row bound gets weaker, never invalid).
    """
    started = time.perf_counter()
    plan = optimal_counts(problem, time_limit=time_limit, workers=workers, seed=seed)
    weight = plan.weight
    if plan.status == "INFEASIBLE":
        return WholeReleaseBound(math.inf, "INFEASIBLE", math.inf, 0.0,
                                 time.perf_counter() - started)
    a_bound = plan.bound / weight.denominator if plan.value is not None else 0.0
    if budget is None:
        budget = math.inf if plan.value is None else plan.value / weight.denominator
    b_bound = lower_bound_b(problem, extent, budget, weight, deadline=started + time_limit) \
        if math.isfinite(budget) else 0.0
    if len(problem.values) <= CYCLE_COVER_ROWS:
        b_bound = max(b_bound, cycle_cover_bound(problem, extent, float(budget), weight,
                                                 deadline=started + time_limit))
    return WholeReleaseBound(float(a_bound), plan.status, b_bound, float(budget),
                             time.perf_counter() - started)
