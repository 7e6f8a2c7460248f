"""Counts and candidate groups of the whole-release model
(:mod:`republish.models.whole_release`).

* :func:`optimal_counts`: objective (a) exactly, a small CP-SAT model on counts (how many
  groups each bucket forms, how many new rows of each value join it, how many are
  deferred); any release gives such counts and :func:`republish.models.whole_release.
  realize_counts` (below) turns any count solution into a release;
* :func:`families` / :func:`count_columns`: the candidate groups (columns) of the
  set-partitioning model, by family (a bucket, or the all-new groups of one size range),
  enumerated by :mod:`republish.models.whole_release_enumeration`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from republish.objectives import member_boxes

if TYPE_CHECKING:
    from republish.models.whole_release import WholeReleaseProblem

__all__ = ["BoxExtent", "CountPlan", "Extent", "Family", "ReleaseCounts", "count_columns",
           "families", "optimal_counts", "rational_weight", "realize_counts"]

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

    def boxes(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """The extent of each box ``low[c]..high[c]`` (``(C, d)`` each), as :meth:`batch`."""
        return (high - low).sum(axis=1)

    def batch(self, members: np.ndarray) -> np.ndarray:
        """Extent of every row of ``members`` (``(C, k)`` row indices, ``-1`` = none)."""
        low, high = member_boxes(self.points, members)
        return np.where((members >= 0).any(axis=1), (high - low).sum(axis=1), 0.0)

    def joined(self, members: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``extent(members[b] ∪ {rows[a]})`` for every ``a``, ``b`` (an ``(A, B)`` matrix)."""
        low, high = member_boxes(self.points, members)
        x = self.points[np.asarray(rows, dtype=np.int64)][:, None, :]
        return (np.maximum(high[None], x) - np.minimum(low[None], x)).sum(axis=2)

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


#: CP-SAT's linearization of the count model: 2, the full LP relaxation at every node. At
#: the default (1) a 200-row Adult release at m = 4 took 0.02 s on most seeds and 0.3-5 s
#: (unproven at 5 s) on some (benchmarks/count_model_seeds.py, benchmarks/RESULTS.md).
LINEARIZATION_LEVEL = 2

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
    solver.parameters.linearization_level = LINEARIZATION_LEVEL
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


# --- the set-partitioning model and its relaxation -------------------------------------------


def realize_counts(problem: WholeReleaseProblem, plan: CountPlan
                   ) -> tuple[list[np.ndarray], np.ndarray]:
    """A release with the count plan's (a). Bucket ``b``'s old rows of each value, in order
    of their coordinate sum, spread over its ``g_b`` groups (the ``j``-th of ``k`` to group
    ``⌊j·g_b/k⌋``: distinct groups), then groups without an old row take one from a group
    holding two (``o_b >= g_b``); each joining new row fills the nearest group lacking its
    value. The rest go round robin into new groups (a value's rows at consecutive positions
    land in distinct groups)."""
    assert plan.groups is not None and plan.joins is not None and plan.deferred is not None
    counts, points = ReleaseCounts.of(problem), problem.points
    key = points.sum(axis=1)
    free = {v: sorted(np.flatnonzero(counts.is_new & (problem.values == v)).tolist(),
                      key=lambda i: key[i]) for v in range(problem.domain_size)}
    groups: list[list[int]] = []
    for b, old in enumerate(counts.old_rows):
        mine: list[list[int]] = [[] for _ in range(int(plan.groups[b]))]
        for v in np.flatnonzero(counts.k[b]).tolist():
            rows = sorted(old[problem.values[old] == v].tolist(), key=lambda i: key[i])
            for j, i in enumerate(rows):
                mine[j * len(mine) // len(rows)].append(i)
        for group in mine:
            if not group:
                group.append(max(mine, key=len).pop())
        centre = points[old].mean(axis=0) if len(old) else np.zeros(points.shape[1])
        for v in np.flatnonzero(plan.joins[b]).tolist():
            free[v].sort(key=lambda i: np.abs(points[i] - centre).sum())
            joining, free[v] = free[v][:int(plan.joins[b, v])], free[v][int(plan.joins[b, v]):]
            for i in joining:
                open_ = [g for g in mine if v not in problem.values[g].tolist()]
                min(open_, key=lambda g: np.abs(points[g].mean(axis=0) - points[i]).sum()
                    ).append(i)
        groups.extend(mine)
    deferred = [i for v in free for i in free[v][:int(plan.deferred[v])]]
    left = [free[v][int(plan.deferred[v]):] for v in free]
    total, most = sum(len(r) for r in left), max((len(r) for r in left), default=0)
    if total:
        size = total // problem.m if problem.m * most <= total else most
        mine = [[] for _ in range(size)]
        for position, i in enumerate(i for rows in left for i in rows):
            mine[position % size].append(i)
        groups.extend(mine)
    return [np.array(sorted(g), dtype=np.int64) for g in groups], np.array(sorted(deferred),
                                                                           dtype=np.int64)
