"""Star minimization for l = 2 with two SA values: min-cost perfect bipartite matching (§4).

With two SA values the table is 2-eligible only if both values fill ``n / 2`` rows (sets
``S1`` and ``S2``), and some optimal 2-diverse generalization uses QI-groups of exactly
one row of each (a larger 2-diverse group splits into such pairs without new stars). A
pair ``(t1, t2)`` costs the stars of generalizing both rows together: twice the number of
QIs on which they differ. The optimum is a minimum-cost perfect matching between ``S1``
and ``S2``, solvable exactly in polynomial time at any size.

Rows with identical QI values are interchangeable, so the matching is solved as a
transportation problem between QI classes (OR-Tools ``SimpleMinCostFlow``): class ``a``
of ``S1`` supplies its rows, class ``b`` of ``S2`` demands its rows, an arc costs
``2 * Hamming(a, b)``. Rows of the same class in ``S1`` and ``S2`` are matched first at
cost 0, which some optimum always does because the Hamming distance is a metric (a
transport plan moving mass away from a shared class can be rerouted through it without
extra cost). Pairs of the same class pair are published as one QI-group: merging them
changes no star and keeps the group 2-eligible (Lemma 1).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from ortools.graph.python import min_cost_flow

from republish.certificate import Certificate
from republish.errors import InputError, ParameterError
from republish.models.solve import certificate

__all__ = ["MAX_ARCS", "MatchingSolution", "solve_two_value_matching"]

STEP = "two-value-matching"

#: Class pairs above which the transportation problem is refused (memory).
MAX_ARCS = 50_000_000


@dataclass(frozen=True)
class MatchingSolution:
    """``groups[t]``: QI-group of row ``t``; ``objective``: stars, always optimal (the
    min-cost flow is exact), so ``bound == objective`` and the gap is 0."""

    status: str
    objective: int
    bound: float
    wall_time_s: float
    groups: np.ndarray

    @property
    def gap(self) -> float | None:
        return self.certificate.gap

    @property
    def certificate(self) -> Certificate:
        return certificate(STEP, self.status, self.objective, self.bound,
                           times={"model": self.wall_time_s},
                           detail="min-cost perfect bipartite matching")


def _classes(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    frame = pd.DataFrame(codes)
    ids = frame.groupby(list(frame.columns), sort=True).ngroup().to_numpy(dtype=np.int64)
    first = np.zeros(int(ids.max()) + 1, dtype=np.int64)
    first[ids[::-1]] = np.arange(len(ids))[::-1]
    return ids, codes[first]


def solve_two_value_matching(
    qi_codes: np.ndarray, sensitive: np.ndarray | Sequence[object]
) -> MatchingSolution:
    """Optimal 2-diverse suppression of a table with exactly two SA values."""
    start = time.perf_counter()
    codes = np.asarray(qi_codes, dtype=np.float64)
    value, uniques = pd.factorize(np.asarray(sensitive), sort=True)
    n = len(value)
    if codes.ndim != 2 or len(codes) != n:
        raise ParameterError("qi_codes must be (n, d) with one SA value per row.")
    if len(uniques) != 2:
        raise ParameterError(
            f"the matching model needs exactly two SA values, the table has {len(uniques)}; "
            "use TP+ or the tuple minimization model."
        )
    sizes = np.bincount(value, minlength=2)
    if sizes[0] != sizes[1]:
        raise InputError(
            f"the table is not 2-eligible: SA value {str(uniques[int(sizes.argmax())])!r} "
            f"fills {int(sizes.max())} of {n} rows, more than n/2."
        )
    class_of_row, representative = _classes(codes)
    n_classes = len(representative)
    supply = np.bincount(class_of_row[value == 0], minlength=n_classes)
    demand = np.bincount(class_of_row[value == 1], minlength=n_classes)
    shared = np.minimum(supply, demand)
    sources = np.flatnonzero(supply > shared)
    sinks = np.flatnonzero(demand > shared)
    if len(sources) * len(sinks) > MAX_ARCS:
        raise ParameterError(
            f"{len(sources)} x {len(sinks)} QI-class pairs exceed {MAX_ARCS} arcs; coarsen "
            "the QIs or use TP+."
        )
    # Arc list: (class in S1, class in S2, flow, cost per pair)
    tails = [np.flatnonzero(shared)]
    heads = [tails[0]]
    flows = [shared[tails[0]]]
    costs = [np.zeros(len(tails[0]), dtype=np.int64)]
    if len(sources):
        tail = np.repeat(sources, len(sinks))
        head = np.tile(sinks, len(sources))
        distance = (representative[tail] != representative[head]).sum(axis=1)
        network = min_cost_flow.SimpleMinCostFlow()
        arcs = network.add_arcs_with_capacity_and_unit_cost(
            np.arange(len(tail)) // len(sinks),
            len(sources) + np.arange(len(tail)) % len(sinks),
            np.full(len(tail), n, dtype=np.int64),
            2 * distance.astype(np.int64),
        )
        network.set_nodes_supplies(
            np.arange(len(sources) + len(sinks)),
            np.concatenate([supply[sources] - shared[sources], shared[sinks] - demand[sinks]]),
        )
        if network.solve() != network.OPTIMAL:
            raise RuntimeError("min-cost flow did not reach an optimum on a balanced network.")
        flow = network.flows(arcs)
        used = flow > 0
        tails.append(tail[used])
        heads.append(head[used])
        flows.append(flow[used])
        costs.append(2 * distance[used])
    tail = np.concatenate(tails)
    head = np.concatenate(heads)
    flow = np.concatenate(flows).astype(np.int64)
    cost = np.concatenate(costs).astype(np.int64)
    groups = np.empty(n, dtype=np.int64)
    for side, ends in ((0, tail), (1, head)):
        rows = np.flatnonzero(value == side)
        rows = rows[np.argsort(class_of_row[rows], kind="stable")]
        order = np.argsort(ends, kind="stable")
        # Rows of a class, in order, fill that class's arcs in order.
        groups[rows] = np.repeat(order, flow[order])
    objective = int((flow * cost).sum())
    return MatchingSolution("OPTIMAL", objective, float(objective),
                            time.perf_counter() - start, groups)
