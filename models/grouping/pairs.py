"""Exact pairing of a bucket with signature size 2: min-cost flow with a dual certificate.

A balanced bucket with signature ``{v_1, v_2}`` and ``k`` rows per value becomes ``k``
groups of one row of each value (m-invariance paper, §4.3). The perimeter of a pair of
real rows ``a, b`` is ``2 · Σ_j |a_j - b_j|`` on normalized codes, and a pair with a
counterfeit has perimeter 0, so the best grouping is a minimum-cost perfect matching.
Rows with the same QI codes are interchangeable, so the matching is solved as a
transportation problem between *types* (distinct QI vectors, supply = their number of rows):

* ``A``: types of ``v_1``'s real rows; ``B``: of ``v_2``'s; ``f_1``, ``f_2``: counterfeits;
* network: ``A_t -> B_s`` (cost ``c(t, s) = Σ_j |a_tj - b_sj|``), ``A_t -> P_2`` and
  ``P_1 -> B_s`` (cost 0) where the pool ``P_1`` supplies the ``f_1`` counterfeits of
  ``v_1`` and ``P_2`` absorbs the ``f_2`` counterfeits of ``v_2``; no arc ``P_1 -> P_2``
  (a group of counterfeits only). Capacities (an arc carries at most the rows of either
  end) never bind; they only help the solver.

A complete bipartite graph has ``|A|·|B|`` arcs (10^8 for a bucket of 20,000 distinct
rows), so the network is solved on candidate arcs only (nearest neighbours both ways, a
feasible pairing and the hint's pairs) with OR-Tools' min-cost flow, and then *priced*
(:mod:`republish.models.grouping.pricing`): Bellman-Ford on the residual graph gives node
potentials ``p`` with reduced costs ``c + p[tail] - p[head] >= 0`` on every residual arc,
and the pricer finds the left-out arcs whose reduced cost is negative; they are added and
the network solved again. When none is left, ``p`` certifies that the flow is optimal for
the complete graph (column generation with an exact pricer). Every round also lowers the
potentials of one side until every arc of the complete graph is dual feasible; that dual
solution's value is the lower bound returned when the time limit stops the loop early.

Codes are rounded to integers at ``1/SCALE`` of the normalized domain; optimality is
exact for the rounded costs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from ortools.graph.python import min_cost_flow

from republish.models.grouping.pricing import LeafPricing, make_pricing

__all__ = ["FIRST_ROUND_SECONDS_PER_ROW", "SCALE", "PairMatching", "match_pairs"]

#: Codes in [0, 1] are rounded to multiples of 1 / SCALE.
SCALE = 100_000
#: Nearest neighbours per type in the first candidate set.
NEIGHBOURS = 8
#: Seconds per row of the first round (types, candidates, one flow, one pricing), measured
#: on Adult buckets of 10,000-20,000 rows on one core (about 0.5 s at 10,000 rows): with
#: less time than this the caller keeps its heuristic instead of overrunning the limit.
FIRST_ROUND_SECONDS_PER_ROW = 5e-5


@dataclass(frozen=True)
class PairMatching:
    """``partner[i]``: the ``B`` row paired with ``A`` row ``i``, or -1 (a counterfeit).

    ``cost`` and ``bound`` are in scaled integer units (``Σ |a - b|·SCALE`` over pairs).
    """

    partner: np.ndarray
    cost: int
    bound: int
    optimal: bool
    rounds: int
    arcs: int


def _types(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of ``codes``, how many rows each stands for, and each row's type."""
    unique, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    return unique, counts.astype(np.int64), inverse.ravel().astype(np.int64)


def _potentials(
    start: np.ndarray, tail: np.ndarray, head: np.ndarray, cost: np.ndarray, flow: np.ndarray,
    capacity: np.ndarray,
) -> np.ndarray:
    """Bellman-Ford on the residual graph from ``start``: the largest feasible potentials
    below it (reduced cost ``c + p[tail] - p[head] >= 0`` on every residual arc).

    Only nodes whose potential dropped in the last pass are relaxed again, so a warm start
    from the previous round's potentials converges in few passes.
    """
    free, used = flow < capacity, flow > 0
    r_tail = np.concatenate([tail[free], head[used]])
    r_head = np.concatenate([head[free], tail[used]])
    r_cost = np.concatenate([cost[free], -cost[used]])
    order = np.argsort(r_tail, kind="stable")
    r_tail, r_head, r_cost = r_tail[order], r_head[order], r_cost[order]
    n = len(start)
    first = np.searchsorted(r_tail, np.arange(n + 1))
    p = start.copy()
    active = np.arange(n)
    for _ in range(4 * n + 4):
        counts = first[active + 1] - first[active]
        if not counts.sum():
            return p
        offsets = np.repeat(first[active] - np.cumsum(counts) + counts, counts)
        arcs = offsets + np.arange(int(counts.sum()))
        candidate = p[r_tail[arcs]] + r_cost[arcs]
        heads = r_head[arcs]
        better = candidate < p[heads]
        if not better.any():
            return p
        before = p.copy()
        np.minimum.at(p, heads[better], candidate[better])
        active = np.flatnonzero(p < before)
    raise RuntimeError("negative cycle in the residual graph: the flow is not optimal")


def _dual_value(
    p: np.ndarray, p_a: np.ndarray, p_b: np.ndarray, supplies: np.ndarray,
    pool_tail: np.ndarray, pool_head: np.ndarray, pool_capacity: np.ndarray,
) -> int:
    """Value of the dual solution ``p`` with the type potentials replaced by ``p_a``, ``p_b``
    (every type-to-type arc of the complete graph dual feasible): ``-Σ supply·p`` plus, for
    the pool arcs whose capacity binds, ``capacity · min(0, reduced cost)``."""
    full = p.copy()
    full[: len(p_a)] = p_a
    full[len(p_a): len(p_a) + len(p_b)] = p_b
    reduced = full[pool_tail] - full[pool_head]
    return int(-(supplies @ full) + pool_capacity @ np.minimum(reduced, 0))


def _rows_of_units(type_of_unit: np.ndarray, row_type: np.ndarray) -> np.ndarray:
    """A distinct row of the given type for every unit of flow."""
    rows_by_type = np.argsort(row_type, kind="stable")
    first = np.searchsorted(row_type[rows_by_type], np.arange(int(row_type.max()) + 2))
    order = np.argsort(type_of_unit, kind="stable")
    sorted_types = type_of_unit[order]
    rank = np.arange(len(order)) - np.searchsorted(sorted_types, sorted_types)
    rows = np.empty(len(order), dtype=np.int64)
    rows[order] = rows_by_type[first[sorted_types] + rank]
    return rows


def match_pairs(
    qa: np.ndarray,
    qb: np.ndarray,
    counterfeits_a: int,
    counterfeits_b: int,
    time_limit: float,
    hint_partner: np.ndarray | None = None,
) -> PairMatching:
    """Minimum-cost pairing of the real rows ``qa`` (value 1) and ``qb`` (value 2).

    ``counterfeits_a`` counterfeits of value 1 pair with rows of ``qb``, ``counterfeits_b``
    of value 2 with rows of ``qa``; ``len(qa) + counterfeits_a == len(qb) + counterfeits_b``
    and at most ``len(qa) - counterfeits_b >= 0`` real pairs (checked by the caller).
    ``hint_partner`` (same meaning as :attr:`PairMatching.partner`) seeds the candidates.
    """
    start = time.perf_counter()
    n1 = len(qa)
    pairs = n1 - counterfeits_b
    if pairs == 0 or qa.shape[1] == 0:
        # Every pair holds a counterfeit, or there is no QI: any pairing costs 0.
        partner = np.full(n1, -1, dtype=np.int64)
        partner[:pairs] = np.arange(pairs)
        return PairMatching(partner, 0, 0, True, 0, 0)
    ta, count_a, type_a = _types(np.asarray(qa, dtype=np.int64))
    tb, count_b, type_b = _types(np.asarray(qb, dtype=np.int64))
    na, nb = len(ta), len(tb)
    leaves = LeafPricing(ta, tb)
    pricing = make_pricing(ta, tb)
    a1, b1 = leaves.neighbours(True, NEIGHBOURS, count_a, count_b)
    a2, b2 = leaves.neighbours(False, NEIGHBOURS, count_b, count_a)
    # Real pairs by rank along the leaf order keep the candidate network feasible (the
    # rows left over go to the pools); the hint's pairs seed it with a good solution.
    order_a, order_b = leaves.order()
    safe_a = np.repeat(order_a, count_a[order_a])[:pairs]
    safe_b = np.repeat(order_b, count_b[order_b])[:pairs]
    if hint_partner is not None:
        hinted = np.flatnonzero(hint_partner >= 0)
        safe_a = np.concatenate([safe_a, type_a[hinted]])
        safe_b = np.concatenate([safe_b, type_b[hint_partner[hinted]]])
    keys = np.unique(np.concatenate([a1 * nb + b1, a2 * nb + b2, safe_a * nb + safe_b]))

    pool_a, pool_b = na + nb, na + nb + 1
    supplies = np.concatenate([count_a, -count_b, [counterfeits_a, -counterfeits_b]])
    supplies = supplies.astype(np.int64)
    pool_tail = np.concatenate([
        np.arange(na) if counterfeits_b else np.zeros(0, np.int64),
        np.full(nb if counterfeits_a else 0, pool_a),
    ]).astype(np.int64)
    pool_head = np.concatenate([
        np.full(na if counterfeits_b else 0, pool_b),
        na + np.arange(nb) if counterfeits_a else np.zeros(0, np.int64),
    ]).astype(np.int64)
    pool_capacity = np.concatenate([
        count_a if counterfeits_b else np.zeros(0, np.int64),
        count_b if counterfeits_a else np.zeros(0, np.int64),
    ])
    p = np.zeros(na + nb + 2, dtype=np.int64)
    rounds, best_bound = 0, -(2**62)
    while True:
        rounds += 1
        began = time.perf_counter()
        arc_a, arc_b = keys // nb, keys % nb
        cost = np.abs(ta[arc_a] - tb[arc_b]).sum(axis=1)
        tail = np.concatenate([arc_a, pool_tail])
        head = np.concatenate([na + arc_b, pool_head])
        costs = np.concatenate([cost, np.zeros(len(pool_tail), np.int64)])
        capacity = np.concatenate([np.minimum(count_a[arc_a], count_b[arc_b]), pool_capacity])
        network = min_cost_flow.SimpleMinCostFlow()
        arcs = network.add_arcs_with_capacity_and_unit_cost(
            tail.astype(np.int32), head.astype(np.int32), capacity, costs
        )
        network.set_nodes_supplies(np.arange(na + nb + 2, dtype=np.int32), supplies)
        status = network.solve()
        if status != network.OPTIMAL:
            raise RuntimeError(f"min-cost flow failed on a feasible pairing: status {status}")
        flow = np.asarray(network.flows(arcs))
        total = int(network.optimal_cost())
        p = _potentials(p, tail, head, costs, flow, capacity)
        u, v = -p[:na], p[na:na + nb]
        priced = pricing.price(u, v)
        bound = max(_dual_value(p, -priced.u_lowered, p[na:na + nb], supplies, pool_tail,
                                pool_head, pool_capacity),
                    _dual_value(p, -u, priced.v_lowered, supplies, pool_tail, pool_head,
                                pool_capacity))
        best_bound = max(best_bound, bound)
        new_keys = priced.tails * nb + priced.heads
        if len(new_keys):
            at = np.minimum(np.searchsorted(keys, new_keys), len(keys) - 1)
            new_keys = np.unique(new_keys[keys[at] != new_keys])
        round_time = time.perf_counter() - began
        optimal = len(new_keys) == 0
        out_of_time = time.perf_counter() - start + round_time > time_limit
        if optimal or out_of_time:
            break
        keys = np.unique(np.concatenate([keys, new_keys]))
    used = flow[: len(cost)] > 0
    units = np.repeat(np.flatnonzero(used), flow[: len(cost)][used])
    partner = np.full(n1, -1, dtype=np.int64)
    partner[_rows_of_units(arc_a[units], type_a)] = _rows_of_units(arc_b[units], type_b)
    if optimal:
        best_bound = total
    return PairMatching(partner, total, min(best_bound, total), optimal, rounds, len(keys))
