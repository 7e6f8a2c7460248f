"""The transportation problem of one pair of signature values, kept to be solved again
under other weights of its QIs (:mod:`republish.models.whole_release_pair_bound`).

For values ``u < v``, every bucket ``b`` with ``u, v ∈ σ_b`` pairs its old rows of ``u``
with distinct partners of value ``v`` and its old rows of ``v`` with partners of ``u``: old
rows of the other value in ``b``, new rows (each in one bucket at most), or counterfeits
(at most the bucket's share and ``⌊A*⌋`` over all buckets). An arc of bucket ``b`` between
rows ``x`` and ``y`` costs ``Σ_q W[b, q]·d_q(x, y)``, with ``d_q`` the extent of the pair on
QI ``q``; the network keeps each arc's ``d_q`` so that a new ``W`` only re-solves it, and the
flow's per-bucket, per-QI totals are a supergradient of the least cost in ``W`` (the least
cost is a minimum of functions linear in ``W``). Rows equal in every coordinate share a
node. Costs are rounded down to integers (``SCALE`` units) and ``d_q`` is stored rounded
toward zero in single precision, so the least cost never exceeds the exact one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from ortools.graph.python import min_cost_flow

from republish.models.whole_release_capacity import Chain

__all__ = ["SCALE", "Nodes", "PairNetwork", "Side", "build_network", "chain_lengths",
           "nodes_of", "qi_distances"]

#: Integer units per unit of cost in the transportation problems (rounded down).
SCALE = 10_000

Nodes = tuple[np.ndarray, np.ndarray]  # a representative row per distinct point, its count
#: Stored extents are scaled by this before single-precision rounding (relative error at most
#: 2^-24), so that they never exceed the exact ones.
SHRINK = 1.0 - 2.0**-22
Distance = Callable[[np.ndarray, np.ndarray], np.ndarray]


def nodes_of(key: np.ndarray, rows: np.ndarray) -> Nodes:
    """Distinct points among ``rows``: a representative row each and its count."""
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    _, first, count = np.unique(key[rows], return_index=True, return_counts=True)
    return rows[first], count.astype(np.int64)


def chain_lengths(chain: Chain, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The cost of the lowest common cell of rows ``a`` and ``b`` on a hierarchy chain
    (index arrays of broadcastable shapes; the result has their broadcast shape)."""
    cells, costs = chain
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    pending = np.ones(shape, dtype=bool)
    length = np.zeros(shape)
    for level in range(cells.shape[0]):
        meet = pending & (cells[level, a] == cells[level, b])
        length[meet] = np.broadcast_to(costs[level, a], shape)[meet]
        pending &= ~meet
    return length


def qi_distances(numeric: list[np.ndarray], chains: list[Chain]) -> list[Distance]:
    """Per QI, ``(rows_a, rows_b) -> (len(rows_a), len(rows_b))`` pair extents ``d_q``: the
    distance on a numeric QI, the cost of the lowest common cell on a chain."""
    def line(x: np.ndarray) -> Distance:
        return lambda a, b: np.abs(x[a][:, None] - x[b][None, :])

    def chain(link: Chain) -> Distance:
        return lambda a, b: chain_lengths(link, a[:, None], b[None, :])

    return [line(x) for x in numeric] + [chain(link) for link in chains]


@dataclass(frozen=True)
class Side:
    """One bucket's part of the pairing of values ``u`` and ``v``: its old rows of each
    (nodes) and the counterfeits of each it may hold."""

    bucket: int
    old_u: Nodes
    old_v: Nodes
    fakes_u: int
    fakes_v: int


@dataclass(frozen=True)
class PairNetwork:
    """The network of one pair of values: arcs (``tails``, ``heads``, ``capacities``),
    node ``supplies``; ``priced`` the arcs that cost, with their bucket and ``d`` (one
    column per QI); ``fake_arcs`` the two arcs every pairing with a counterfeit passes
    (one per value)."""

    nodes: int
    tails: np.ndarray
    heads: np.ndarray
    capacities: np.ndarray
    supplies: np.ndarray
    priced: np.ndarray
    bucket: np.ndarray
    d: np.ndarray
    fake_arcs: np.ndarray

    def solve(self, weights: np.ndarray, fake_price: float = 0.0
              ) -> tuple[float, np.ndarray] | None:
        """Least cost under ``weights`` (per bucket, per QI), each pairing with a
        counterfeit charged ``fake_price`` (rounded down), and its supergradient ``Σ``
        flow·``d`` per bucket and QI. None when no pairing exists."""
        units = np.zeros(len(self.tails), dtype=np.int64)
        if len(self.priced):
            per_arc = np.einsum("aq,aq->a", self.d, (weights * SCALE)[self.bucket])
            units[self.priced] = per_arc.astype(np.int64)  # rounded down (costs >= 0)
        units[self.fake_arcs] = int(fake_price * SCALE)
        flow = min_cost_flow.SimpleMinCostFlow()
        flow.add_arcs_with_capacity_and_unit_cost(self.tails, self.heads, self.capacities,
                                                  units)
        flow.set_nodes_supplies(np.arange(self.nodes, dtype=np.int32), self.supplies)
        if flow.solve() != flow.OPTIMAL:
            return None
        gradient = np.zeros(weights.shape)
        if len(self.priced):
            used = np.asarray(flow.flows(self.priced), dtype=np.float64)
            carrying = np.flatnonzero(used)  # about one arc per old row of the lesser side
            np.add.at(gradient, self.bucket[carrying],
                      used[carrying, None] * self.d[carrying])
        return flow.optimal_cost() / SCALE, gradient


def build_network(sides: list[Side], new_u: Nodes, new_v: Nodes, fakes_u: int, fakes_v: int,
                  distances: list[Distance], max_arcs: int) -> PairNetwork | None:
    """The network of one pair of values (module docstring); None when it would have more
    than ``max_arcs`` arcs."""
    supply_u = sum(int(side.old_u[1].sum()) for side in sides)
    demand_v = sum(int(side.old_v[1].sum()) for side in sides)
    (nu, mu), (nv, mv) = new_u, new_v
    p, r = len(nu), len(nv)
    arcs_needed = sum(len(side.old_u[0]) * (len(side.old_v[0]) + r) + p * len(side.old_v[0])
                      for side in sides)
    if arcs_needed > max_arcs:
        return None
    # nodes: new u [0, p), new v [p, p+r), hub_u, hub_v, shared fake u, shared fake v,
    # then per bucket: old u, old v, its fake u, its fake v
    hub_u, hub_v, fake_u, fake_v = p + r, p + r + 1, p + r + 2, p + r + 3
    big = supply_u + demand_v + 1
    tails: list[np.ndarray] = []
    heads: list[np.ndarray] = []
    caps: list[np.ndarray] = []
    buckets: list[np.ndarray] = []
    lengths: list[np.ndarray] = []

    def arcs(t: np.ndarray | list[int], h: np.ndarray | list[int], c: np.ndarray | int,
             bucket: int = -1, d: np.ndarray | None = None) -> None:
        t, h = np.asarray(t).ravel(), np.asarray(h).ravel()
        tails.append(t)
        heads.append(h)
        caps.append(np.broadcast_to(np.asarray(c, dtype=np.int64).ravel(), t.shape))
        buckets.append(np.full(t.shape, bucket, dtype=np.int64))
        if d is not None:
            lengths.append(d)

    def pair_extents(rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
        single = np.empty((len(rows_a) * len(rows_b), len(distances)), dtype=np.float32)
        for q, d in enumerate(distances):
            # shrunk by more than single precision's rounding: never above the exact extent
            single[:, q] = (d(rows_a, rows_b) * SHRINK).ravel()
        return single

    arcs(p + np.arange(r), np.full(r, hub_v), mv)
    arcs(np.full(p, hub_u), np.arange(p), mu)
    fake_arcs = np.array([p + r, p + r + 1], dtype=np.int32)  # the next two arcs
    arcs([hub_u], [fake_u], fakes_u)
    arcs([fake_v], [hub_v], fakes_v)
    arcs([hub_u], [hub_v], big)
    supplies = [np.zeros(p + r + 4, dtype=np.int64)]
    supplies[0][hub_u], supplies[0][hub_v] = demand_v, -supply_u
    base = p + r + 4
    for side in sides:
        (au, cu), (av, cv) = side.old_u, side.old_v
        a, b = len(au), len(av)
        own_fake_u, own_fake_v = base + a + b, base + a + b + 1
        grid = np.indices((a, b))
        arcs(base + grid[0], base + a + grid[1], big, side.bucket, pair_extents(au, av))
        if r:
            grid = np.indices((a, r))
            arcs(base + grid[0], p + grid[1], big, side.bucket, pair_extents(au, nv))
        if p:
            grid = np.indices((p, b))
            arcs(grid[0], base + a + grid[1], big, side.bucket, pair_extents(nu, av))
        arcs(base + np.arange(a), np.full(a, own_fake_v), big)
        arcs([own_fake_v], [fake_v], side.fakes_v)
        arcs([fake_u], [own_fake_u], side.fakes_u)
        arcs(np.full(b, own_fake_u), base + a + np.arange(b), big)
        supplies.append(np.concatenate([cu, -cv, [0, 0]]).astype(np.int64))
        base += a + b + 2
    bucket = np.concatenate(buckets)
    priced = np.flatnonzero(bucket >= 0)
    d = np.concatenate(lengths) if lengths else np.zeros((0, len(distances)), np.float32)
    return PairNetwork(base, np.concatenate(tails).astype(np.int32),
                       np.concatenate(heads).astype(np.int32), np.concatenate(caps),
                       np.concatenate(supplies), priced.astype(np.int32), bucket[priced], d,
                       fake_arcs)
