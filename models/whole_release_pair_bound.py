"""A lower bound on objective (b) of one release step from the groups of its buckets, by
one transportation problem per pair of signature values.

Objective (b) of :mod:`republish.models.whole_release` is ``Σ_G |σ(G)|·ext(R(G))``, the
perimeter of the m-invariance paper (Xiao & Tao 2007, §4.3), with ``ext`` a sum over QIs
of a function of each QI's interval (:func:`republish.models.whole_release_row_bound.
_separable`: numeric QIs on ``[0, 1]``, hierarchy QIs as chains of cells). The old rows of
bucket ``b`` keep its signature ``σ_b`` (§4.1), so every group of ``b`` holds exactly one
row per value of ``σ_b`` (``s_b = |σ_b|`` slots): an old row of ``b``, a new row, or a
counterfeit. Validity of :func:`pair_bound`:

1. **Pairs bound a group's extent.** For ``k <= s`` points and one QI ``q``, ``Σ_{pairs}
   d_q(x, y) <= r_q(s)·ext_q`` with ``d_q`` the extent of the pair: on a line ``r =
   ⌊s/2⌋·⌈s/2⌉`` (the pairs straddling each gap between sorted points); for a hierarchy
   chain ``r_q`` is the largest ``Σ_{pairs} d_q / ext_q`` over multisets of at most ``s``
   leaves of the rows' own tree (:func:`_chain_ratio`, a knapsack over each node's
   children), since ``d_q(x, y)`` is the cost of the pair's lowest common cell. So
   ``s_b·ext(R(G)) >= s_b·Σ_{u<v ∈ σ_b} c(G_u, G_v)`` with ``c = Σ_q d_q / r_q(s_b)``
   and ``c = 0`` when ``G_u`` or ``G_v`` is a counterfeit.
2. **Pairs of values relax to transportation problems.** For two values ``u < v``, the
   groups of every bucket ``b`` with ``u, v ∈ σ_b`` pair its old rows of ``u`` with
   distinct partners of value ``v`` (and its old rows of ``v`` with partners of ``u``):
   old rows of the other value in ``b``, new rows (each in one group of the release, so
   in one bucket), or counterfeits, at most ``min(spare_b, o_b - k[b, ·])`` in ``b``
   (``spare_b``: ``⌊A*⌋`` minus what the other buckets need anyway,
   :func:`republish.models.whole_release_capacity.budget`; ``b`` has at most ``o_b``
   groups, each holding an old row) and ``⌊A*⌋`` over all buckets. Pairs of two new rows
   cost ``>= 0`` and are dropped. The least cost ``F(u, v)`` of such pairings of all
   buckets at once (every old row paired, new rows and counterfeits optional, arc costs
   ``s_b·c``) is one min-cost flow, and ``(b) >= Σ_{u<v} F(u, v)``: the release's groups
   are one such pairing for every ``(u, v)`` at once, and groups without old rows add
   ``>= 0``.

3. **NCP** (``|R(G)|`` real rows in place of ``|σ(G)|`` slots): a group of ``b`` with
   ``f`` counterfeits has ``k = s_b - f`` real rows, whose pairs sum to at most
   ``r_q(k)·ext_q``; ``k / r_q(k)`` does not grow with ``k`` (a copy of the point whose
   distances to the others sum highest adds at least ``2/k`` of the sum without widening
   the group, so ``r_q(k+1) >= r_q(k)·(k+2)/k``), hence ``|R(G)|·ext >= (s_b /
   r_q(s_b))·Σ_{real pairs} d_q``: the arc costs, and the bound, are the same.

Costs are rounded down to integers (``SCALE`` units), which keeps the bound valid; rows
equal in every coordinate share one node. Measured on 20,000 Adult rows (m = 3, release
2): 10,344 against the row bound's 7,490, about 3 s (the transportation problems). Of the
gap to the best release found (15,340 in 60 s), the primal's own groups show where it is:
their pair relaxation is 13,323, so 14 % is lost in step 1 (education and native-country,
whose trees give ``r = 3`` where a line gives 2) and the rest in step 2 or in the release.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
from ortools.graph.python import min_cost_flow

from republish.models.whole_release_capacity import Chain, budget
from republish.models.whole_release_counts import Extent, ReleaseCounts
from republish.models.whole_release_row_bound import _separable, row_bound
from republish.objectives import ReleaseCost

if TYPE_CHECKING:
    from republish.models.whole_release_problem import WholeReleaseProblem

__all__ = ["PairBound", "lower_bound_b", "pair_bound"]

#: Integer units per unit of extent in the transportation problems (rounded down).
SCALE = 10_000
#: Arcs of one transportation problem above which it is skipped (counts 0): 20,000 Adult
#: rows need at most ~0.9M (m = 3, 4; about 0.1 s each); a 200,000-row census far more.
MAX_ARCS = 4_000_000


@dataclass(frozen=True)
class PairBound:
    """``bound``: a lower bound on (b) over releases of (a) ``<= a_star``; ``per_pair``
    each pair of values' part; ``complete``: every pair was solved before the deadline
    (otherwise the missing pairs count 0)."""

    bound: float
    per_pair: dict[tuple[int, int], float]
    complete: bool
    wall_time_s: float


def _line_ratio(s: int) -> int:
    return (s // 2) * ((s + 1) // 2)


def _chain_ratio(chain: Chain, s: int) -> float:
    """The largest ``Σ_{pairs} d / ext`` over multisets of ``2..s`` leaves of the chain's
    rows, ``d`` the cost of a pair's lowest common cell and ``ext`` the group's: per cell,
    a knapsack over its children of the pairs inside each child."""
    cells, costs = chain
    if cells.shape[0] < 2 or s < 2:
        return 1.0
    keys, first = np.unique(cells.T, axis=0, return_index=True)  # distinct leaf paths
    cost_of = costs[:, first]
    pairs = np.arange(s + 1) * (np.arange(s + 1) - 1) / 2.0
    # best[cell]: the largest Σ_{pairs} d of j = 0..s leaves inside the cell
    best = {int(cell): pairs * float(cost_of[0, np.flatnonzero(keys[:, 0] == cell)[0]])
            for cell in np.unique(keys[:, 0])}
    ratio = 1.0
    for level in range(1, cells.shape[0]):
        merged: dict[int, np.ndarray] = {}
        for cell in np.unique(keys[:, level]).tolist():
            inside = keys[:, level] == cell
            f = float(cost_of[level, np.flatnonzero(inside)[0]])
            # table[c][t]: best Σ over children of (inner pairs - f·pairs), t leaves in
            # c = 0, 1, >= 2 nonempty children
            table = np.full((3, s + 1), -math.inf)
            table[0, 0] = 0.0
            for child in np.unique(keys[inside, level - 1]).tolist():
                inner = best[int(child)] - pairs * f
                grown = table.copy()  # the child left empty
                for c in range(3):
                    for t in range(s + 1):
                        if table[c, t] == -math.inf:
                            continue
                        for j in range(1, s - t + 1):
                            c2 = min(c + 1, 2)
                            grown[c2, t + j] = max(grown[c2, t + j], table[c, t] + inner[j])
                table = grown
            merged[int(cell)] = pairs * f + table.max(axis=0)
            spread = table[2, 2:]
            if f > 0 and np.isfinite(spread).any():
                ratio = max(ratio, float((pairs[2:] + spread / f)[np.isfinite(spread)].max()))
        best = merged
    return ratio


def _pair_cost(numeric: list[np.ndarray], chains: list[Chain], ratios: list[float],
               rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    """``(len(rows_a), len(rows_b))`` pair costs ``Σ_q d_q / r_q``."""
    cost = np.zeros((len(rows_a), len(rows_b)))
    q = 0
    for x in numeric:
        cost += np.abs(x[rows_a][:, None] - x[rows_b][None, :]) / ratios[q]
        q += 1
    for cells, costs in chains:
        pending = np.ones_like(cost, dtype=bool)
        pair = np.zeros_like(cost)
        for level in range(cells.shape[0]):
            meet = pending & (cells[level, rows_a][:, None] == cells[level, rows_b][None, :])
            pair[meet] = np.broadcast_to(costs[level, rows_a][:, None], cost.shape)[meet]
            pending &= ~meet
        cost += pair / ratios[q]
        q += 1
    return cost


Nodes = tuple[np.ndarray, np.ndarray]  # a representative row per distinct point, its count


@dataclass(frozen=True)
class _Side:
    """One bucket's part of the pairing of values ``u`` and ``v``: its old rows of each
    (nodes), the counterfeits of each it may hold, and its pair cost (integer units)."""

    old_u: Nodes
    old_v: Nodes
    fakes_u: int
    fakes_v: int
    cost: Callable[[np.ndarray, np.ndarray], np.ndarray]


def _flow(sides: list[_Side], new_u: Nodes, new_v: Nodes, fakes_u: int, fakes_v: int
          ) -> int | None:
    """Least integer cost of pairing, in every bucket of ``sides``, each old row of ``u``
    and of ``v`` with a partner of the other value: an old row of the bucket, a new row
    (each in one bucket at most), or a counterfeit (at most the bucket's and ``fakes_*``
    over all buckets). None when no pairing exists or the network has more than
    MAX_ARCS arcs."""
    supply_u = sum(int(side.old_u[1].sum()) for side in sides)
    demand_v = sum(int(side.old_v[1].sum()) for side in sides)
    if not supply_u and not demand_v:
        return 0
    (nu, mu), (nv, mv) = new_u, new_v
    p, r = len(nu), len(nv)
    arcs_needed = sum(len(side.old_u[0]) * (len(side.old_v[0]) + r) + p * len(side.old_v[0])
                      for side in sides)
    if arcs_needed > MAX_ARCS:  # too large to solve in a release's budget: claim nothing
        return None
    # nodes: new u [0, p), new v [p, p+r), hub_u, hub_v, shared fake u, shared fake v,
    # then per bucket: old u, old v, its fake u, its fake v
    hub_u, hub_v, fake_u, fake_v = p + r, p + r + 1, p + r + 2, p + r + 3
    big = supply_u + demand_v + 1
    tails: list[np.ndarray] = []
    heads: list[np.ndarray] = []
    caps: list[np.ndarray] = []
    units: list[np.ndarray] = []

    def arcs(t: np.ndarray, h: np.ndarray, c: np.ndarray | int, u: np.ndarray | int) -> None:
        t, h = np.asarray(t).ravel(), np.asarray(h).ravel()
        tails.append(t)
        heads.append(h)
        caps.append(np.broadcast_to(np.asarray(c, dtype=np.int64).ravel(), t.shape))
        units.append(np.broadcast_to(np.asarray(u, dtype=np.int64).ravel(), t.shape))

    arcs(p + np.arange(r), np.full(r, hub_v), mv, 0)
    arcs(np.full(p, hub_u), np.arange(p), mu, 0)
    arcs(np.array([hub_u]), np.array([fake_u]), fakes_u, 0)
    arcs(np.array([fake_v]), np.array([hub_v]), fakes_v, 0)
    arcs(np.array([hub_u]), np.array([hub_v]), big, 0)
    supplies = [np.zeros(p + r + 4, dtype=np.int64)]
    supplies[0][hub_u], supplies[0][hub_v] = demand_v, -supply_u
    base = p + r + 4
    for side in sides:
        (au, cu), (av, cv) = side.old_u, side.old_v
        a, b = len(au), len(av)
        own_fake_u, own_fake_v = base + a + b, base + a + b + 1
        grid = np.indices((a, b))
        arcs(base + grid[0], base + a + grid[1], big, side.cost(au, av))
        if r:
            grid = np.indices((a, r))
            arcs(base + grid[0], p + grid[1], big, side.cost(au, nv))
        if p:
            grid = np.indices((p, b))
            arcs(grid[0], base + a + grid[1], big, side.cost(nu, av))
        arcs(base + np.arange(a), np.full(a, own_fake_v), big, 0)
        arcs(np.array([own_fake_v]), np.array([fake_v]), side.fakes_v, 0)
        arcs(np.array([fake_u]), np.array([own_fake_u]), side.fakes_u, 0)
        arcs(np.full(b, own_fake_u), base + a + np.arange(b), big, 0)
        supplies.append(np.concatenate([cu, -cv, [0, 0]]).astype(np.int64))
        base += a + b + 2
    flow = min_cost_flow.SimpleMinCostFlow()
    flow.add_arcs_with_capacity_and_unit_cost(
        np.concatenate(tails).astype(np.int32), np.concatenate(heads).astype(np.int32),
        np.concatenate(caps), np.concatenate(units))
    flow.set_nodes_supplies(np.arange(base, dtype=np.int32), np.concatenate(supplies))
    if flow.solve() != flow.OPTIMAL:
        return None
    return int(flow.optimal_cost())


def _nodes(key: np.ndarray, rows: np.ndarray) -> Nodes:
    """Distinct points among ``rows``: a representative row each and its count."""
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    _, first, count = np.unique(key[rows], return_index=True, return_counts=True)
    return rows[first], count.astype(np.int64)


def pair_bound(problem: WholeReleaseProblem, extent: Extent | None = None,
               a_star: float | Fraction = 0, *, deadline: float = math.inf) -> PairBound:
    """A lower bound on (b) over the releases of ``problem`` whose (a) is at most ``a_star``
    (pass A*, or any upper bound on it), by the argument of the module docstring; 0 for
    an extent that is not a separable perimeter. Past ``deadline``
    (``time.perf_counter()`` seconds) the remaining pairs of values count 0."""
    started = time.perf_counter()
    counts = ReleaseCounts.of(problem)
    cost_model = getattr(extent, "cost", None)
    if isinstance(cost_model, ReleaseCost) and cost_model.name == "ncp":
        # NCP: the same bound (module docstring, 3.), read on the perimeter's coordinates
        extent = dataclasses.replace(cost_model, name="perimeter").model_extent(len)
    separable = _separable(problem, extent)
    if separable is None or not len(problem.values):
        return PairBound(0.0, {}, separable is not None, time.perf_counter() - started)
    numeric, chains = separable
    cf_max = max(math.floor(Fraction(a_star).limit_denominator(10**9)), 0)
    spare, _ = budget(problem, counts, cf_max)
    coordinates = np.column_stack([*numeric, *(c[0][0] for c in chains)])
    _, key = np.unique(coordinates, axis=0, return_inverse=True)
    key = key.ravel()
    values, bucket = problem.values, problem.bucket
    empty: Nodes = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    new_nodes = {int(v): _nodes(key, np.flatnonzero((bucket < 0) & (values == v)))
                 for v in np.unique(values[bucket < 0]).tolist()}
    ratios: dict[int, list[float]] = {}

    def cost_of(s: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        if s not in ratios:
            ratios[s] = [float(_line_ratio(s))] * len(numeric) + [
                _chain_ratio(chain, s) for chain in chains]
        ratio = ratios[s]
        return lambda rows_a, rows_b: np.floor(
            s * SCALE * _pair_cost(numeric, chains, ratio, rows_a, rows_b)).astype(np.int64)

    sides: dict[tuple[int, int], list[_Side]] = {}
    for b, sigma in enumerate(problem.signatures):
        old = counts.old_rows[b]
        if not len(old):
            continue
        cost = cost_of(len(sigma))
        members = {v: _nodes(key, old[values[old] == v]) for v in sorted(sigma)}
        fakes = {v: int(min(spare[b], len(old) - counts.k[b, v])) for v in sorted(sigma)}
        for i, u in enumerate(sorted(sigma)):
            for v in sorted(sigma)[i + 1:]:
                sides.setdefault((u, v), []).append(
                    _Side(members[u], members[v], fakes[u], fakes[v], cost))
    per_pair: dict[tuple[int, int], float] = {}
    complete = True
    for (u, v), parts in sides.items():
        if time.perf_counter() > deadline:
            complete = False
            break
        found = _flow(parts, new_nodes.get(u, empty), new_nodes.get(v, empty), cf_max, cf_max)
        if found is None:  # no pairing: (a) <= a_star is impossible; claim nothing
            complete = False
            continue
        per_pair[(u, v)] = found / SCALE
    return PairBound(float(sum(per_pair.values())), per_pair, complete,
                     time.perf_counter() - started)


def lower_bound_b(problem: WholeReleaseProblem, extent: Extent | None, a_star: float | Fraction,
                  weight: Fraction | None = None, *, deadline: float = math.inf) -> float:
    """The larger of the row bound (:func:`republish.models.whole_release_row_bound.
    row_bound`) and the pair bound on (b), over the releases of (a) ``<= a_star``; the
    pair bound gets what is left until ``deadline``."""
    rows = row_bound(problem, extent, a_star, weight, deadline=deadline).bound
    if time.perf_counter() >= deadline:
        return rows
    return max(rows, pair_bound(problem, extent, a_star, deadline=deadline).bound)
