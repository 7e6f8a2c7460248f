"""Exact pairing of a bucket with signature size 2: min-cost flow with a dual certificate.

A balanced bucket with signature ``{v_1, v_2}`` and ``k`` rows per value becomes ``k``
groups of one row of each value (m-invariance paper, §4.3). The perimeter of a pair of
real rows ``a, b`` is ``2 · Σ_j |a_j - b_j|`` on normalized codes, and a pair with a
counterfeit has perimeter 0, so the best grouping is a minimum-cost perfect matching:

* ``A``: real rows of ``v_1``; ``B``: real rows of ``v_2``; ``f_1``, ``f_2``: counterfeits;
* network: ``A_i -> B_j`` (cost ``Σ_j |a - b|``), ``A_i -> P_2`` and ``P_1 -> B_j`` (cost 0)
  where the pool ``P_1`` supplies the ``f_1`` counterfeits of ``v_1`` and ``P_2`` absorbs
  the ``f_2`` counterfeits of ``v_2``; no arc ``P_1 -> P_2`` (a group of counterfeits only).

A complete bipartite graph has ``|A|·|B|`` arcs (10^8 for a bucket of 20,000 rows), so
the network is solved on candidate arcs only (nearest neighbours both ways and a feasible
pairing, e.g. the greedy split's), with OR-Tools' min-cost flow, and then *priced*:
Bellman-Ford on the residual graph gives node potentials ``p`` with reduced costs
``c + p[tail] - p[head] >= 0`` on every residual arc; a missing arc with negative
reduced cost is added and the network solved again. When no arc is missing, ``p``
certifies that the flow is optimal for the complete graph. Pricing prunes pairs of
spatial leaves whose box distance cannot beat the potentials. Every pricing pass also
gives the Lagrangian lower bound ``Σ_v supply_v·(-p_v) + Σ_arcs min(0, reduced cost)``,
which is returned when the time limit stops the loop early.

Codes are rounded to integers at ``1/SCALE`` of the normalized domain; optimality is
exact for the rounded costs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from ortools.graph.python import min_cost_flow

__all__ = ["SCALE", "PairMatching", "match_pairs"]

#: Codes in [0, 1] are rounded to multiples of 1 / SCALE.
SCALE = 100_000
#: Rows per spatial leaf used for candidate search and pricing.
_LEAF = 64
#: Nearest neighbours per row in the first candidate set.
_NEIGHBOURS = 12
#: Most negative arcs added per row and per column in one pricing round.
_PER_ROUND = 6
_INF = np.iinfo(np.int64).max


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


def _distances(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``(len(left), len(right))`` L1 distances of integer codes."""
    out = np.abs(left[:, None, 0] - right[None, :, 0]).astype(np.int64)
    for j in range(1, left.shape[1]):
        out += np.abs(left[:, None, j] - right[None, :, j])
    return out


def _leaves(points: np.ndarray) -> list[np.ndarray]:
    """Sort-tile-recursive leaves of about ``_LEAF`` rows on the widest (up to 3) QIs."""
    n, d = points.shape
    if n <= _LEAF or d == 0:
        return [np.arange(n)]
    spread = points.max(axis=0) - points.min(axis=0)
    dims = [int(j) for j in np.argsort(-spread)[: min(3, d)]]
    per = max(1, round((n / _LEAF) ** (1 / len(dims))))

    def split(rows: np.ndarray, level: int) -> list[np.ndarray]:
        if level == len(dims) or len(rows) <= _LEAF:
            return [rows]
        rows = rows[np.argsort(points[rows, dims[level]], kind="stable")]
        parts = np.array_split(rows, min(per, max(1, len(rows) // _LEAF)))
        return [leaf for part in parts for leaf in split(part, level + 1)]

    return split(np.arange(n), 0)


class _Leaves:
    """Leaves of ``A ∪ B`` with the box of each side, for neighbour search and pricing."""

    def __init__(self, qa: np.ndarray, qb: np.ndarray) -> None:
        n1 = len(qa)
        leaves = _leaves(np.vstack([qa, qb]))
        self.qa, self.qb = qa, qb
        self.a = [leaf[leaf < n1] for leaf in leaves]
        self.b = [leaf[leaf >= n1] - n1 for leaf in leaves]
        self.a_low, self.a_high = self._boxes(self.a, qa)
        self.b_low, self.b_high = self._boxes(self.b, qb)
        self.a_size = np.array([len(x) for x in self.a])
        self.b_size = np.array([len(x) for x in self.b])

    @staticmethod
    def _boxes(parts: list[np.ndarray], codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = codes.shape[1]
        low = np.full((len(parts), d), 4 * SCALE, dtype=np.int64)
        high = np.full((len(parts), d), -4 * SCALE, dtype=np.int64)
        for t, rows in enumerate(parts):
            if len(rows):
                low[t], high[t] = codes[rows].min(axis=0), codes[rows].max(axis=0)
        return low, high

    def neighbours(self, from_a: bool) -> tuple[np.ndarray, np.ndarray]:
        """About ``_NEIGHBOURS`` nearest other-side rows of every row: (A rows, B rows)."""
        mine, other = (self.a, self.b) if from_a else (self.b, self.a)
        codes, other_codes = (self.qa, self.qb) if from_a else (self.qb, self.qa)
        low, high = (self.b_low, self.b_high) if from_a else (self.a_low, self.a_high)
        size = self.b_size if from_a else self.a_size
        tails, heads = [], []
        for rows in mine:
            if not len(rows):
                continue
            gap = _box_gap(codes[rows], low, high)
            chosen, total = [], 0
            for leaf in np.argsort(gap, kind="stable").tolist():
                if size[leaf]:
                    chosen.append(other[leaf])
                    total += size[leaf]
                    if total >= 3 * _NEIGHBOURS:
                        break
            targets = np.concatenate(chosen)
            k = min(_NEIGHBOURS, len(targets))
            nearest = np.argpartition(_distances(codes[rows], other_codes[targets]), k - 1,
                                      axis=1)[:, :k]
            tails.append(np.repeat(rows, k))
            heads.append(targets[nearest.ravel()])
        if not tails:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        t, h = np.concatenate(tails), np.concatenate(heads)
        return (t, h) if from_a else (h, t)

    def price(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Arcs ``A_i -> B_j`` with reduced cost ``c - u_i - v_j < 0``.

        Returns the most negative few per row and per column, the number of negative arcs
        and the sum of all negative reduced costs (for the Lagrangian bound).
        """
        n2 = len(self.qb)
        v_max = np.array([v[rows].max() if len(rows) else -_INF for rows in self.b])
        row_t, row_h = [], []
        col_val = np.full((_PER_ROUND, n2), _INF)
        col_idx = np.zeros((_PER_ROUND, n2), dtype=np.int64)
        negative, negative_sum = 0, 0
        for rows in self.a:
            if not len(rows):
                continue
            gap = _box_gap(self.qa[rows], self.b_low, self.b_high)
            # A leaf pair whose box distance beats every potential holds no negative arc.
            leaves = np.flatnonzero((gap - u[rows].max() - v_max < 0) & (self.b_size > 0))
            if not len(leaves):
                continue
            cols = np.concatenate([self.b[leaf] for leaf in leaves.tolist()])
            reduced = _distances(self.qa[rows], self.qb[cols])
            reduced -= u[rows][:, None]
            reduced -= v[cols][None, :]
            mask = reduced < 0
            count = int(mask.sum())
            if not count:
                continue
            negative += count
            negative_sum += int(reduced[mask].sum())
            k = min(_PER_ROUND, len(cols))
            best = np.argpartition(reduced, k - 1, axis=1)[:, :k]
            keep = (np.take_along_axis(reduced, best, axis=1) < 0).ravel()
            row_t.append(np.repeat(rows, k)[keep])
            row_h.append(cols[best.ravel()][keep])
            hit = np.flatnonzero(mask.any(axis=0))
            sub = reduced[:, hit]
            kc = min(_PER_ROUND, len(rows))
            pick = np.argpartition(sub, kc - 1, axis=0)[:kc]
            target = cols[hit]
            merged_val = np.vstack([col_val[:, target], np.take_along_axis(sub, pick, axis=0)])
            merged_idx = np.vstack([col_idx[:, target], rows[pick]])
            sel = np.argpartition(merged_val, _PER_ROUND - 1, axis=0)[:_PER_ROUND]
            col_val[:, target] = np.take_along_axis(merged_val, sel, axis=0)
            col_idx[:, target] = np.take_along_axis(merged_idx, sel, axis=0)
        found = col_val < 0
        tails = np.concatenate([*row_t, col_idx[found]])
        heads = np.concatenate([*row_h, np.nonzero(found)[1]])
        return tails, heads, negative, negative_sum


def _box_gap(rows: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """L1 distance from the box of ``rows`` to every box ``low..high``."""
    lo, hi = rows.min(axis=0), rows.max(axis=0)
    return np.maximum(0, np.maximum(low - hi, lo - high)).sum(axis=1)


def _potentials(
    start: np.ndarray, tail: np.ndarray, head: np.ndarray, cost: np.ndarray, flow: np.ndarray
) -> np.ndarray:
    """Bellman-Ford on the residual graph from ``start``: the largest feasible potentials
    below it (reduced cost ``c + p[tail] - p[head] >= 0`` on every residual arc).

    Only nodes whose potential dropped in the last pass are relaxed again, so a warm start
    from the previous round's potentials converges in few passes.
    """
    forward = flow == 0
    r_tail = np.where(forward, tail, head)
    r_head = np.where(forward, head, tail)
    r_cost = np.where(forward, cost, -cost)
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
    n1, n2 = len(qa), len(qb)
    pairs = n1 - counterfeits_b
    if pairs == 0 or qa.shape[1] == 0:
        # Every pair holds a counterfeit, or there is no QI: any pairing costs 0.
        partner = np.full(n1, -1, dtype=np.int64)
        partner[:pairs] = np.arange(pairs)
        return PairMatching(partner, 0, 0, True, 0, 0)
    leaves = _Leaves(qa, qb)
    a1, b1 = leaves.neighbours(from_a=True)
    a2, b2 = leaves.neighbours(from_a=False)
    # A feasible pairing along the leaf order (real pairs by rank, the rest pooled) keeps
    # the candidate network feasible; the hint's pairs seed it with a good solution.
    safe_a = np.concatenate(leaves.a)[:pairs]
    safe_b = np.concatenate(leaves.b)[:pairs]
    if hint_partner is not None:
        hinted = np.flatnonzero(hint_partner >= 0)
        safe_a = np.concatenate([safe_a, hinted])
        safe_b = np.concatenate([safe_b, hint_partner[hinted]])
    keys = np.unique(np.concatenate([a1 * n2 + b1, a2 * n2 + b2, safe_a * n2 + safe_b]))

    pool_a, pool_b = n1 + n2, n1 + n2 + 1
    supplies = np.concatenate([np.ones(n1), -np.ones(n2), [counterfeits_a, -counterfeits_b]])
    supplies = supplies.astype(np.int64)
    pool_tail = np.concatenate([
        np.arange(n1) if counterfeits_b else np.zeros(0, np.int64),
        np.full(n2 if counterfeits_a else 0, pool_a),
    ])
    pool_head = np.concatenate([
        np.full(n1 if counterfeits_b else 0, pool_b),
        n1 + np.arange(n2) if counterfeits_a else np.zeros(0, np.int64),
    ])
    p = np.zeros(n1 + n2 + 2, dtype=np.int64)
    rounds, best_bound = 0, -_INF
    round_time = 0.0
    while True:
        rounds += 1
        began = time.perf_counter()
        arc_a, arc_b = keys // n2, keys % n2
        cost = np.abs(qa[arc_a].astype(np.int64) - qb[arc_b]).sum(axis=1)
        tail = np.concatenate([arc_a, pool_tail]).astype(np.int64)
        head = np.concatenate([n1 + arc_b, pool_head]).astype(np.int64)
        costs = np.concatenate([cost, np.zeros(len(pool_tail), np.int64)])
        network = min_cost_flow.SimpleMinCostFlow()
        arcs = network.add_arcs_with_capacity_and_unit_cost(
            tail.astype(np.int32), head.astype(np.int32), np.ones(len(tail), np.int64), costs
        )
        network.set_nodes_supplies(np.arange(n1 + n2 + 2, dtype=np.int32), supplies)
        status = network.solve()
        if status != network.OPTIMAL:
            raise RuntimeError(f"min-cost flow failed on a feasible pairing: status {status}")
        flow = np.asarray(network.flows(arcs))
        total = int(network.optimal_cost())
        p = _potentials(p, tail, head, costs, flow)
        new_a, new_b, negative, negative_sum = leaves.price(-p[:n1], p[n1:n1 + n2])
        reduced_pool = costs[len(cost):] + p[pool_tail] - p[pool_head]
        bound = int(-(supplies * p).sum()) + negative_sum + int(np.minimum(reduced_pool, 0).sum())
        best_bound = max(best_bound, bound)
        new_keys = new_a * n2 + new_b
        if len(new_keys):
            at = np.minimum(np.searchsorted(keys, new_keys), len(keys) - 1)
            new_keys = np.unique(new_keys[keys[at] != new_keys])
        round_time = time.perf_counter() - began
        optimal = negative == 0 or len(new_keys) == 0
        out_of_time = time.perf_counter() - start + round_time > time_limit
        if optimal or out_of_time:
            break
        keys = np.unique(np.concatenate([keys, new_keys]))
    used = flow[: len(cost)] > 0
    partner = np.full(n1, -1, dtype=np.int64)
    partner[arc_a[used]] = arc_b[used]
    if optimal:
        best_bound = total
    return PairMatching(partner, total, min(best_bound, total), optimal, rounds, len(keys))
