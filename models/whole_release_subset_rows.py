"""Subset-row cuts on the columns left by reduced-cost fixing of the whole-release model.

Stage 2 of :mod:`republish.models.whole_release` proves an incumbent of cost ``UB`` by
reduced-cost fixing: every solution of cost ``<= UB`` uses only the *pool* of columns whose
reduced cost is at most ``UB - D`` (``D`` the LP's bound). When the pool is too large for
SCIP in the time left (the first release of 200 Adult rows at m = 3: 377,000 columns, 100 s),
this module tightens the LP over the pool alone and fixes again.

For three rows ``S``, the subset-row inequality (Jepsen, Petersen, Spoorendonk & Pisinger,
*Subset-row inequalities applied to the vehicle-routing problem with time windows*,
Operations Research 56(2), 2008, §3)::

    Σ_{c : |R_c ∩ S| >= 2} x_c <= 1

is half the sum of the three cover rows, rounded down (a Chvátal-Gomory cut of rank 1), so
every integral solution meets it, whether rows are covered exactly or at most once. The
LP over the pool with such cuts is solved by column generation over the pool (each round
prices every pool column exactly). With duals ``y`` (rows), ``y_a`` (the (a) row) and
``σ_S <= 0`` (cuts), and ``rc_c = cost_c - Σ_{i∈R_c} y_i - y_a·a_c - Σ_{S hit by c} σ_S``,
every integral solution ``x`` over the pool has::

    cost·x >= Σ_i y_i + y_a·rhs + Σ_S σ_S + Σ_c rc_c·x_c          (weak duality)
           >= D' := Σ_i y_i + y_a·rhs + Σ_S σ_S + Σ_anchor min(0, min_{c anchored} rc_c)

(disjoint columns have distinct anchors, their least row). So ``min(UB, D')`` bounds the
release, and a pool column with ``rc_c > UB - D'`` is in no solution cheaper than ``UB``:
the second fixing, whose pool SCIP then solves with the cuts as constraints.
Measured on the first release of 200 Adult rows at m = 3: the LP rose from 63.50 to 64.19
with 69 cuts (incumbent 65.08), and the second pool held 76,000 columns.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from republish.models.whole_release_bound import Master
from republish.models.whole_release_master import IncrementalMaster

__all__ = ["SubsetRowBound", "separate_subset_rows", "tighten_pool"]

#: Cuts added per separation round (the most violated first), violations below
#: MIN_VIOLATION ignored, and at most MAX_CUTS in all: on 200 Adult rows at m = 3 three
#: rounds of at most 50 found every violated cut (69).
CUTS_PER_ROUND, MIN_VIOLATION, MAX_CUTS = 50, 1e-3, 600
#: Pool columns entering the LP per pricing round (the least reduced costs first), and the
#: LP's first columns: the least reduced costs under the fixing's duals, per row.
ENTERING, START_PER_ROW = 4_000, 25


@dataclass(frozen=True)
class SubsetRowBound:
    """``bound``: ``D'`` of the module docstring, a lower bound on every solution over the
    pool of cost ``<= UB``; ``keep``: the pool columns (global ids) of reduced cost
    ``<= UB - D'`` plus the incumbent's; ``cuts``: the triples of rows cut, and
    ``cut_columns`` each one's pool columns (global ids, sorted) holding two of its rows;
    ``rounds``: LP solves; ``converged``: the LP priced every pool column out."""

    bound: float
    keep: np.ndarray
    cuts: tuple[tuple[int, int, int], ...]
    rounds: int
    converged: bool
    cut_columns: tuple[np.ndarray, ...] = ()


class _PoolIndex:
    """For each row, the pool columns holding it (compressed), to find a cut's columns."""

    def __init__(self, members: np.ndarray, rows: int) -> None:
        column, slot = np.nonzero(members >= 0)
        row = members[column, slot]
        order = np.argsort(row, kind="stable")
        self.columns = column[order]
        self.starts = np.searchsorted(row[order], np.arange(rows + 1))

    def hit(self, triple: tuple[int, int, int]) -> np.ndarray:
        """The pool columns (local ids) holding at least two rows of ``triple``."""
        held = np.concatenate([self.columns[self.starts[i]:self.starts[i + 1]] for i in triple])
        ids, times = np.unique(held, return_counts=True)
        return ids[times >= 2]


def separate_subset_rows(members: np.ndarray, x: np.ndarray, rows: int,
                         limit: int = CUTS_PER_ROUND, min_violation: float = MIN_VIOLATION,
                         deadline: float = math.inf
                         ) -> list[tuple[tuple[int, int, int], float]]:
    """The triples ``S`` of rows whose subset-row inequality the point ``x >= 0`` (over the
    columns ``members``, covering every row at most once, as the LP's points do) violates
    by more than ``min_violation``, the most violated first (at most ``limit``), with their
    left-hand sides. Past ``deadline`` (``time.perf_counter()``) the triples not yet tried
    are left out.

    A column holding two rows of ``S`` adds its ``x`` to their pair's weight ``w`` (the sum
    of ``x`` over the columns holding both), one holding all three to all three pairs, so
    the left-hand side is at most ``w_ij + w_ik + w_jk``: only triples whose pairs weigh
    more than ``1 + min_violation`` together are tried, and two of their pairs, which share
    a row ``i``, have weight: ``j`` and ``k`` are both partners of ``i``."""
    positive = np.flatnonzero(x > 1e-9)
    if len(positive) < 2 or members.shape[1] < 2:
        return []
    held, weight = members[positive], x[positive]
    # the pairs' weights, as sorted keys i * rows + j (i < j) and their sums
    firsts, seconds, shares = [], [], []
    for a, b in itertools.combinations(range(held.shape[1]), 2):
        both = (held[:, a] >= 0) & (held[:, b] >= 0)
        firsts.append(np.minimum(held[both, a], held[both, b]))
        seconds.append(np.maximum(held[both, a], held[both, b]))
        shares.append(weight[both])
    if not sum(map(len, firsts)):
        return []
    keys, inverse = np.unique(np.concatenate(firsts) * rows + np.concatenate(seconds),
                              return_inverse=True)
    pair_weight = np.bincount(inverse.ravel(), weights=np.concatenate(shares))

    def weight_of(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        key = np.minimum(i, j) * rows + np.maximum(i, j)
        at = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
        return np.where(keys[at] == key, pair_weight[at], 0.0)

    ends = np.concatenate([keys // rows, keys % rows])
    partner = np.concatenate([keys % rows, keys // rows])
    order = np.argsort(ends, kind="stable")
    ends, partner = ends[order], partner[order]
    starts = np.searchsorted(ends, np.arange(rows + 1))
    found_triples = []
    for i in np.flatnonzero(np.diff(starts) >= 2).tolist():
        if time.perf_counter() > deadline:
            break
        partners = partner[starts[i]:starts[i + 1]]
        left, right = np.triu_indices(len(partners), 1)
        j, k = partners[left], partners[right]
        total = weight_of(np.full(len(j), i), j) + weight_of(np.full(len(j), i), k) + \
            weight_of(j, k)
        chosen = total > 1 + min_violation
        if chosen.any():
            found_triples.append(np.sort(np.column_stack(
                [np.full(int(chosen.sum()), i), j[chosen], k[chosen]]), axis=1))
    if not found_triples:
        return []
    triples = np.unique(np.vstack(found_triples), axis=0)
    incidence = np.zeros((len(positive), rows), dtype=np.int8)
    column, slot = np.nonzero(held >= 0)
    incidence[column, held[column, slot]] = 1
    found: list[tuple[tuple[int, int, int], float]] = []
    for block in np.array_split(triples, max(1, len(triples) // 20_000)):
        times = incidence[:, block[:, 0]] + incidence[:, block[:, 1]] + incidence[:, block[:, 2]]
        lhs = weight @ (times >= 2)
        for k in np.flatnonzero(lhs > 1 + min_violation).tolist():
            i, j, r = (int(v) for v in block[k])
            found.append(((i, j, r), float(lhs[k])))
    found.sort(key=lambda item: (-item[1], item[0]))
    return found[:limit]


def tighten_pool(master: Master, pool: np.ndarray, incumbent: np.ndarray, upper: float,
                 start_rc: np.ndarray, *, deadline: float) -> SubsetRowBound | None:
    """The LP over the columns ``pool`` of ``master`` (global ids) with subset-row cuts
    (module docstring), its bound ``D'`` and the columns it leaves under ``upper - D'``.

    ``incumbent``: the incumbent's columns (in ``pool``), of cost ``upper``; ``start_rc``:
    the pool's reduced costs under the fixing's duals, which pick the LP's first columns.
    None when the deadline (``time.perf_counter()``) passes before a bound."""
    pool = np.asarray(pool, dtype=np.int64)
    rows = len(master.exact)
    members = master.members[pool]
    valid = members >= 0
    cost, a_coef = master.cost[pool], master.a_coef[pool]
    anchor = np.where(valid, members, rows).min(axis=1)
    index = _PoolIndex(members, rows)
    # the LP's first columns: each row's cheapest under the fixing's duals, and the incumbent
    column, slot = np.nonzero(valid)
    row = members[column, slot]
    order = np.lexsort((start_rc[column], row))
    rank = np.arange(len(order)) - np.searchsorted(row[order], row[order])
    start = np.unique(np.concatenate([column[order][rank < START_PER_ROW],
                                      np.flatnonzero(np.isin(pool, incumbent))]))
    # the pool as a master of its own: local column ids 0..len(pool)-1
    local = dataclasses.replace(master, members=members, cost=cost, a_coef=a_coef)
    lp = IncrementalMaster(local, start)
    cuts: list[tuple[int, int, int]] = []
    best_bound, rounds, converged = -math.inf, 0, False
    best_rc: np.ndarray | None = None
    entering = np.zeros(0, dtype=np.int64)
    while time.perf_counter() < deadline:
        relaxed = lp.relax(local, deadline - time.perf_counter(), add=entering)
        if relaxed is None:
            break
        rounds += 1
        least = np.full(rows + 1, 0.0)  # disjoint columns have distinct anchors
        np.minimum.at(least, anchor, relaxed.rc)
        bound = float(relaxed.y.sum() + relaxed.y_a * master.rhs + relaxed.sigma.sum()
                      + least[:rows].sum())
        if bound > best_bound:
            best_bound, best_rc = bound, relaxed.rc
        loaded = lp.loaded
        negative = np.flatnonzero((relaxed.rc < -1e-9) & ~loaded)
        if len(negative):  # price the pool: the LP is not its optimum yet
            entering = negative[np.argsort(relaxed.rc[negative], kind="stable")[:ENTERING]]
            continue
        entering = np.zeros(0, dtype=np.int64)
        converged = True
        if len(cuts) >= MAX_CUTS:
            break
        violated = separate_subset_rows(members[loaded], relaxed.x[loaded], rows,
                                        deadline=deadline)
        known = set(cuts)
        fresh = [s for s, _ in violated if s not in known]
        if not fresh:
            break
        for triple in fresh[:MAX_CUTS - len(cuts)]:
            cuts.append(triple)
            lp.add_cut(index.hit(triple))
        converged = False
    if best_rc is None:
        return None
    gap = upper - best_bound + 1e-9 * max(1.0, abs(upper))
    keep = np.union1d(pool[best_rc <= gap], incumbent).astype(np.int64)
    return SubsetRowBound(best_bound, keep, tuple(cuts), rounds, converged,
                          tuple(pool[hit] for hit in lp.hits))
