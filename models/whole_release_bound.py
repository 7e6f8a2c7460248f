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
  is realized by :func:`republish.models.whole_release.realize_counts`.
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
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from ortools.graph.python import min_cost_flow
from ortools.linear_solver.python import model_builder
from ortools.sat.python import cp_model

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

#: ``extent(rows) -> float`` over an int array of row indices; must be >= 0 and monotone
#: under inclusion (``R ⊆ R'`` implies ``extent(R) <= extent(R')``).
Extent = Callable[[np.ndarray], float]


class BoxExtent:
    """The paper's extent (§4.3): ``Σ_q (max - min)`` of the rows' normalized coordinates."""

    def __init__(self, points: np.ndarray) -> None:
        self.points = np.asarray(points, dtype=np.float64)

    def __call__(self, rows: np.ndarray) -> float:
        chosen = self.points[np.asarray(rows, dtype=np.int64)]
        return float((chosen.max(axis=0) - chosen.min(axis=0)).sum()) if len(chosen) else 0.0

    def batch(self, members: np.ndarray) -> np.ndarray:
        """Extent of every row of ``members`` (``(C, k)`` row indices, ``-1`` = none)."""
        used = members >= 0
        coords = self.points[np.where(used, members, 0)]
        high = np.where(used[:, :, None], coords, -np.inf).max(axis=1)
        low = np.where(used[:, :, None], coords, np.inf).min(axis=1)
        return np.where(used.any(axis=1), (high - low).sum(axis=1), 0.0)

    def pairwise(self, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
        """``extent({i, j})`` (the L1 distance) for ``i`` in ``rows_a``, ``j`` in ``rows_b``."""
        total = np.zeros((len(rows_a), len(rows_b)))
        for q in range(self.points.shape[1]):
            total += np.abs(self.points[rows_a, q][:, None] - self.points[rows_b, q][None, :])
        return total


def rational_weight(weight: float) -> Fraction:
    """The deferral weight as the nearest fraction ``p/q`` with ``q <= 1000``."""
    return Fraction(weight).limit_denominator(1000)


@dataclass(frozen=True)
class ReleaseCounts:
    """Per-bucket and per-value counts of a problem (``B`` buckets, ``V`` values)."""

    old_rows: tuple[np.ndarray, ...]  # old rows of each bucket
    k: np.ndarray                     # (B, V) old rows per value
    in_signature: np.ndarray          # (B, V) bool: v ∈ σ_b
    new_per_value: np.ndarray         # (V,) N_v
    is_new: np.ndarray                # (n,) bool

    @classmethod
    def of(cls, problem: WholeReleaseProblem) -> ReleaseCounts:
        buckets, values = len(problem.signatures), problem.domain_size
        k = np.zeros((buckets, values), dtype=np.int64)
        old = problem.bucket >= 0
        np.add.at(k, (problem.bucket[old], problem.values[old]), 1)
        sig = np.zeros((buckets, values), dtype=bool)
        for b, sigma in enumerate(problem.signatures):
            sig[b, sorted(sigma)] = True
        return cls(tuple(np.flatnonzero(problem.bucket == b) for b in range(buckets)), k, sig,
                   np.bincount(problem.values[~old], minlength=values), ~old)

    @property
    def groups_needed(self) -> np.ndarray:  # K_b
        return self.k.max(axis=1) if self.k.size else np.zeros(len(self.k), np.int64)

    @property
    def signature_size(self) -> np.ndarray:  # s_b
        return self.in_signature.sum(axis=1)

    def forced_counterfeits(self) -> np.ndarray:
        """Counterfeits bucket ``b`` needs in any release: ``Σ_v max(0, K_b - k[b,v] - N_v)``."""
        short = self.groups_needed[:, None] - self.k - self.new_per_value[None, :]
        return np.where(self.in_signature, np.maximum(short, 0), 0).sum(axis=1)


@dataclass(frozen=True)
class CountPlan:
    """The count model's answer; ``value`` and ``bound`` are (a) times ``weight``'s
    denominator (integers); ``groups``/``joins``/``deferred`` are ``g_b``, ``x[b,v]``, ``d_v``."""

    status: str
    weight: Fraction
    value: int | None
    bound: int
    groups: np.ndarray | None = None
    joins: np.ndarray | None = None
    deferred: np.ndarray | None = None


_CP_STATUS = {cp_model.OPTIMAL: "OPTIMAL", cp_model.FEASIBLE: "FEASIBLE",
              cp_model.INFEASIBLE: "INFEASIBLE"}


def optimal_counts(problem: WholeReleaseProblem, *, time_limit: float, workers: int = 1,
                   seed: int = 0) -> CountPlan:
    """Solve the count model of the module docstring (CP-SAT): the exact optimum of (a)."""
    counts = ReleaseCounts.of(problem)
    weight = rational_weight(problem.deferral_weight)
    p, q = weight.numerator, weight.denominator
    n_v, m, values = counts.new_per_value.tolist(), problem.m, range(problem.domain_size)
    model = cp_model.CpModel()
    g, x, counterfeits = [], {}, []
    for b, rows in enumerate(counts.old_rows):
        g.append(model.new_int_var(int(counts.groups_needed[b]), len(rows), f"g[{b}]"))
        for v in np.flatnonzero(counts.in_signature[b] & (counts.new_per_value > 0)).tolist():
            x[b, v] = model.new_int_var(0, n_v[v], f"x[{b},{v}]")
            model.add(x[b, v] <= g[b] - int(counts.k[b, v]))
        counterfeits.append(int(counts.signature_size[b]) * g[b] - len(rows)
                            - sum(x[b, v] for v in values if (b, v) in x))
    d = [model.new_int_var(0, n_v[v] if problem.allow_deferrals else 0, f"d[{v}]")
         for v in values]
    y = [model.new_int_var(0, n_v[v], f"y[{v}]") for v in values]
    for v in values:
        model.add(y[v] == n_v[v] - sum(x[b, v] for b in range(len(g)) if (b, v) in x) - d[v])
    c_new = model.new_int_var(0, m * sum(n_v) if problem.counterfeits_in_new_groups else 0,
                              "c_new")
    for v in values:
        if problem.counterfeits_in_new_groups:
            model.add(c_new >= m * y[v] - sum(y))
        else:
            model.add(m * y[v] <= sum(y))
    model.minimize(q * (sum(counterfeits) + c_new) + p * sum(d))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(float(time_limit), 0.001)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    status = _CP_STATUS.get(solver.solve(model), "TIMEOUT")
    if status not in ("OPTIMAL", "FEASIBLE"):
        return CountPlan(status, weight, None, 0)
    joins = np.zeros(counts.k.shape, dtype=np.int64)
    for (b, v), var in x.items():
        joins[b, v] = solver.value(var)
    return CountPlan(status, weight, int(round(solver.objective_value)),
                     int(np.ceil(solver.best_objective_bound - 1e-6)),
                     np.array([solver.value(v) for v in g], dtype=np.int64), joins,
                     np.array([solver.value(v) for v in d], dtype=np.int64))


# --- columns ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Family:
    """Columns with at most one row of each pool (one pool per value), ``lo..hi`` rows and,
    when ``need_old``, an old row; ``signature``: their ``|σ|`` (0: all new, ``max(m, |R|)``)."""

    pools: tuple[np.ndarray, ...]
    lo: int
    hi: int
    signature: int
    need_old: bool


def families(problem: WholeReleaseProblem, counts: ReleaseCounts, cf_max: int) -> list[Family]:
    """One family per bucket holding old rows, one of all-new columns; ``cf_max`` bounds the
    counterfeits of any release considered (so ``cf <= cf_max - Σ_{b'≠b} forced_{b'}``)."""
    forced = counts.forced_counterfeits()
    new_pools = [np.flatnonzero(counts.is_new & (problem.values == v))
                 for v in range(problem.domain_size)]
    found = []
    for b, old in enumerate(counts.old_rows):
        if len(old):
            s = int(counts.signature_size[b])
            pools = tuple(np.concatenate([old[problem.values[old] == v], new_pools[v]])
                          for v in np.flatnonzero(counts.in_signature[b]).tolist())
            spare = cf_max - int(forced.sum() - forced[b])
            found.append(Family(pools, max(1, s - spare), s, s, True))
    if counts.is_new.any():
        spare = cf_max - int(forced.sum()) if problem.counterfeits_in_new_groups else 0
        found.append(Family(tuple(new_pools), max(1, problem.m - spare), 2 * problem.m - 1, 0,
                            False))
    return found


def count_columns(family: Family, is_new: np.ndarray) -> int:
    """How many columns ``family`` has: coefficients of ``Π_v (1 + |pool_v|·z)``, minus the
    all-new ones when an old row is needed."""
    def subsets(per_value: list[int]) -> int:
        poly = [1]
        for a in per_value:
            poly = [c + (a * poly[k - 1] if k else 0) for k, c in enumerate(poly + [0])]
            poly = poly[:family.hi + 1]
        return sum(poly[family.lo:family.hi + 1])
    total = subsets([len(p) for p in family.pools])
    return total - subsets([int(is_new[p].sum()) for p in family.pools]) if family.need_old \
        else total


def enumerate_columns(problem: WholeReleaseProblem, family: Family, *, limit: int,
                      radius: float = math.inf, pi: np.ndarray | None = None,
                      theta: float = math.inf, deadline: float = math.inf
                      ) -> np.ndarray | None:
    """The columns of ``family`` (``(C, hi)`` row indices, ``-1`` pads) of box extent
    ``<= radius`` and, given row prices ``pi``, with ``|σ|·box extent - Σ_{i∈R} pi_i <=
    theta``; ``None`` when more than ``limit`` partial columns arise.

    Built one pool at a time; a partial column ``P`` is dropped when no completion can pass:
    its box only grows, and the rows still to come add at most the ``hi - |P|`` largest
    per-pool maxima of ``max(pi, 0)``. ``None`` too once ``time.perf_counter()`` passes
    ``deadline``."""
    pools = [p for p in family.pools if len(p)]
    points, old_row = problem.points, problem.bucket >= 0
    old_later = np.append(np.cumsum([old_row[p].any() for p in pools][::-1])[::-1][1:], 0) > 0
    gain = np.zeros((len(pools) + 1, family.hi + 1))  # gain[t, k]: k best of pools t..
    if pi is not None:
        best = [float(np.maximum(pi[p], 0).max()) for p in pools]
        for t in range(len(pools)):
            top = np.sort(best[t:])[::-1][:family.hi]
            gain[t, 1:len(top) + 1] = np.cumsum(top)
            gain[t, len(top) + 1:] = gain[t, len(top)]
    members = np.zeros((1, 0), dtype=np.int64)
    size, has_old, paid = np.zeros(1, np.int64), np.zeros(1, bool), np.zeros(1)
    low = np.full((1, points.shape[1]), np.inf)
    high = np.full((1, points.shape[1]), -np.inf)
    for t, rows in enumerate(pools):
        if time.perf_counter() > deadline:
            return None
        grow = np.flatnonzero(size < family.hi)
        parent = np.concatenate([np.flatnonzero(size + len(pools) - t - 1 >= family.lo),
                                 np.repeat(grow, len(rows))])
        row = np.concatenate([np.full(len(parent) - len(grow) * len(rows), -1),
                              np.tile(rows, len(grow))])
        if len(parent) > 20 * limit:
            return None
        taken = row >= 0
        at = np.where(taken, row, 0)
        new_low = np.where(taken[:, None], np.minimum(low[parent], points[at]), low[parent])
        new_high = np.where(taken[:, None], np.maximum(high[parent], points[at]), high[parent])
        new_size = size[parent] + taken
        spread = np.where(new_size > 0, (new_high - new_low).sum(axis=1), 0.0)
        new_paid = paid[parent] + (np.where(taken, pi[at], 0.0) if pi is not None else 0.0)
        new_old = has_old[parent] | (taken & old_row[at])
        ok = spread <= radius
        if pi is not None:
            sigma = family.signature or np.maximum(problem.m, new_size)
            ok &= sigma * spread - new_paid - gain[t + 1, family.hi - new_size] <= theta + 1e-9
        if family.need_old:
            ok &= new_old | old_later[t]
        members = np.hstack([members[parent[ok]], row[ok, None]])
        size, has_old, paid = new_size[ok], new_old[ok], new_paid[ok]
        low, high = new_low[ok], new_high[ok]
        if len(members) > limit:
            return None
    chosen = (size >= max(family.lo, 1)) & (has_old | np.bool_(not family.need_old))
    big = np.iinfo(np.int64).max
    ordered = np.sort(np.where(members[chosen] < 0, big, members[chosen]), axis=1)
    ordered = ordered[:, :family.hi] if ordered.shape[1] >= family.hi else np.hstack(
        [ordered, np.full((len(ordered), family.hi - ordered.shape[1]), big)])
    return np.where(ordered == big, -1, ordered)


# --- the set-partitioning model and its relaxation -------------------------------------------

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


def partition_model(master: Master, keep: np.ndarray
                    ) -> tuple[model_builder.Model, list[Any], list[Any], Any]:
    """The set-partitioning model over the columns ``keep``: model, ``x``, the cover rows and
    the (a) row."""
    model = model_builder.Model()
    x = [model.new_bool_var(f"x[{c}]") for c in keep.tolist()]
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
    all columns (valid for the box extent)."""

    y: np.ndarray
    y_a: float
    pi: np.ndarray
    rc: np.ndarray
    x: np.ndarray
    bound: float
    bound_radius: float


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
    ``(k+1)``-th smallest cost, which only lowers the minimum. ``budget`` defaults to the
    count model's value (A* when its status is OPTIMAL). ``time_limit`` bounds the whole
    call (the (b) bound is 0 when the pair extents are not done by then).
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
    b_bound = cycle_cover_bound(problem, extent, float(budget), weight,
                                deadline=started + time_limit)
    return WholeReleaseBound(float(a_bound), plan.status, b_bound, float(budget),
                             time.perf_counter() - started)
