"""Counts and candidate groups of the whole-release model
(:mod:`republish.models.whole_release`).

* :func:`optimal_counts`: objective (a) exactly, a small CP-SAT model on counts (how many
  groups each bucket forms, how many new rows of each value join it, how many are
  deferred); any release gives such counts and :func:`republish.models.whole_release.
  realize_counts` (below) turns any count solution into a release;
* :func:`families` / :func:`enumerate_columns`: the candidate groups (columns) of the
  set-partitioning model, by family (a bucket, or the all-new groups of one size range),
  enumerated pool by pool with pruning by box extent or by reduced cost.
"""

from __future__ import annotations

import math
import time
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
           "enumerate_columns", "families", "optimal_counts", "rational_weight", "realize_counts"]

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


def enumerate_columns(problem: WholeReleaseProblem, family: Family, *, limit: int,
                      radius: float = math.inf, pi: np.ndarray | None = None,
                      theta: float = math.inf, deadline: float = math.inf,
                      first_forced: bool = False, tight: bool = False) -> np.ndarray | None:
    """The columns of ``family`` (``(C, hi)`` row indices, ``-1`` pads) of box extent
    ``<= radius`` and, given row prices ``pi``, with ``|σ|·extent - Σ_{i∈R} pi_i <= theta``
    (the extent: the problem's ``box_lengths`` of the box, else its widths); ``None`` when
    more than ``limit`` partial columns arise.

    Built one pool at a time; a partial column ``P`` is dropped when no completion can pass:
    its box only grows, and the rows still to come add at most the ``hi - |P|`` largest
    per-pool maxima of ``max(pi, 0)`` (with ``tight``, at most what :func:`_tight_gain`
    allows, which also charges each row for the extent it adds). ``None`` too once
    ``time.perf_counter()`` passes ``deadline``. ``first_forced``: every column holds a row
    of the first pool."""
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
        skip = np.flatnonzero(size + len(pools) - t - 1 >= family.lo) if t or not \
            first_forced else np.zeros(0, np.int64)
        if len(skip) + len(grow) * len(rows) > 20 * limit:
            return None
        # the candidates (a parent, then a row of this pool or none) in blocks, with the
        # deadline checked between them: one step over millions of candidates took
        # 10-17 s (reduced-cost fixing at m = 4 past a 30 s budget)
        per_block = max(1, ENUMERATION_BLOCK // max(len(rows), 1))
        blocks = [(skip, np.full(len(skip), -1))] + [
            (np.repeat(part, len(rows)), np.tile(rows, len(part)))
            for part in np.split(grow, np.arange(per_block, len(grow), per_block))]
        kept = []
        for parent, row in blocks:  # an empty block keeps the arrays' shapes
            if time.perf_counter() > deadline:
                return None
            taken = row >= 0
            at = np.where(taken, row, 0)
            new_low = np.where(taken[:, None], np.minimum(low[parent], points[at]),
                               low[parent])
            new_high = np.where(taken[:, None], np.maximum(high[parent], points[at]),
                                high[parent])
            new_size = size[parent] + taken
            spread = np.where(new_size > 0, (new_high - new_low).sum(axis=1), 0.0)
            new_paid = paid[parent] + (np.where(taken, pi[at], 0.0) if pi is not None
                                       else 0.0)
            new_old = has_old[parent] | (taken & old_row[at])
            ok = spread <= radius
            if pi is not None:
                sigma = family.signature or np.maximum(problem.m, new_size)
                if problem.box_lengths is not None and len(new_size):  # exact, >= widths
                    some = new_size[:, None] > 0
                    spread = np.where(new_size > 0, _box_extent(
                        problem, np.where(some, new_low, 0.0), np.where(some, new_high, 0.0)),
                        0.0)
                future = gain[t + 1, family.hi - new_size]
                if tight and first_forced and t + 1 < len(pools):
                    # only where the loose test passes: the tight one costs a row per
                    # candidate
                    loose = ok & (sigma * spread - new_paid - future <= theta + 1e-9)
                    future = future.copy()
                    future[loose] = np.minimum(future[loose], _tight_gain(
                        problem, family, pools[t + 1:], pi, new_low[loose],
                        new_high[loose], spread[loose], new_size[loose], deadline))
                ok &= sigma * spread - new_paid - future <= theta + 1e-9
            if family.need_old:
                ok &= new_old | old_later[t]
            kept.append((np.hstack([members[parent[ok]], row[ok, None]]), new_size[ok],
                         new_old[ok], new_paid[ok], new_low[ok], new_high[ok]))
            if sum(len(k[0]) for k in kept) > limit:
                return None
        members, size, has_old, paid, low, high = (
            np.concatenate([k[i] for k in kept]) for i in range(6))
    chosen = (size >= max(family.lo, 1)) & (has_old | np.bool_(not family.need_old))
    big = np.iinfo(np.int64).max
    ordered = np.sort(np.where(members[chosen] < 0, big, members[chosen]), axis=1)
    ordered = ordered[:, :family.hi] if ordered.shape[1] >= family.hi else np.hstack(
        [ordered, np.full((len(ordered), family.hi - ordered.shape[1]), big)])
    return np.where(ordered == big, -1, ordered)


def _box_extent(problem: WholeReleaseProblem, low: np.ndarray, high: np.ndarray
                ) -> np.ndarray:
    """The extent of boxes ``low..high`` (shape ``(..., d)``) in ``problem.points``: the
    problem's ``box_lengths`` summed over QIs, else the widths."""
    if problem.box_lengths is None:
        return np.asarray(high - low).sum(axis=-1)
    return problem.box_lengths(low, high).sum(axis=-1)


#: Candidates (partial column, next row) formed at once by :func:`enumerate_columns`,
#: between two looks at its deadline.
ENUMERATION_BLOCK = 262_144
#: Partial columns per block of :func:`_tight_gain` (a block holds ``block × rows × d``).
TIGHT_BLOCK = 1_000


def _tight_gain(problem: WholeReleaseProblem, family: Family, later: list[np.ndarray],
                pi: np.ndarray, low: np.ndarray, high: np.ndarray, spread: np.ndarray,
                size: np.ndarray, deadline: float = math.inf) -> np.ndarray:
    """Per partial column (box ``low..high`` of extent ``spread``, ``size`` rows), an upper
    bound on ``Σ_{x∈S} pi_x - |σ|·(ext(box ∪ S) - spread)`` over the rows ``S`` still to
    come (at most one per pool of ``later``, ``k = hi - size`` of them).

    The extent grows by at least the largest single increase ``d_x = ext(box ∪ {x}) -
    spread``, which is at least their mean, so the quantity is at most ``Σ_{x∈S} (pi_x -
    |σ|·d_x / k)``, and ``|σ| >= m`` (or the family's signature): the ``k`` largest
    per-pool maxima of ``max(0, pi_x - |σ|·d_x / k)``. Past ``deadline`` the partial
    columns left get ``inf`` (no tightening: the caller keeps its loose bound), since a
    block of a few thousand rows takes a noticeable time and the caller's own deadline
    is checked only between pools."""
    sigma = family.signature or problem.m
    rows = np.concatenate(later)
    pool = np.repeat(np.arange(len(later)), [len(p) for p in later])
    useful = pi[rows] > 0
    rows, pool = rows[useful], pool[useful]
    out = np.zeros(len(size))
    if not len(rows):
        return out
    x = problem.points[rows]
    left = np.maximum(family.hi - size, 1).astype(np.float64)
    for start in range(0, len(size), TIGHT_BLOCK):
        part = slice(start, start + TIGHT_BLOCK)
        if time.perf_counter() > deadline:
            out[start:] = math.inf
            break
        joined_low = np.minimum(low[part, None, :], x[None])
        joined_high = np.maximum(high[part, None, :], x[None])
        joined = _box_extent(problem, joined_low, joined_high)
        g = np.maximum(0.0, pi[rows][None] - sigma * (joined - spread[part, None])
                       / left[part, None])
        per_pool = np.zeros((g.shape[0], len(later)))
        np.maximum.at(per_pool.T, pool, g.T)
        ordered = -np.sort(-per_pool, axis=1)
        sums = np.hstack([np.zeros((len(ordered), 1)), np.cumsum(ordered, axis=1)])
        take = np.minimum(family.hi - size[part], len(later))
        out[part] = sums[np.arange(len(ordered)), np.maximum(take, 0)]
    return out


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
