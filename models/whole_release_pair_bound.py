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

4. **Weights.** Step 1 holds with any ``λ_{b,q,p} >= 0`` in place of ``1 / r_q(s_b)``
   that stays in the separation polytope of QI ``q`` (``Σ_p λ_p·d_q(G_p) <= ext_q(G)``
   for every group, :mod:`republish.models.whole_release_pair_weights`), chosen per
   bucket, QI and pair of values; the uniform weights are one such point. The transporta-
   tion problems are kept and solved again under weights proposed by cutting planes, and
   the best point's ``Σ_{u<v} F(u, v)`` is the bound. Not for NCP, whose step 3 needs the
   uniform weights.
5. **A price on counterfeits.** Each pair of values may spend up to ``⌊A*⌋`` counterfeits
   on its own, though the release has at most ``⌊A*⌋`` in all, and a counterfeit in a
   group of bucket ``b`` is the partner of at most ``s_b - 1`` old rows (one per other
   value): over all pairs of values a release makes at most ``K = (s_max - 1)·⌊A*⌋``
   pairings with counterfeits. Charging each such pairing ``μ >= 0`` in every transporta-
   tion problem and subtracting ``μ·K`` keeps the bound (a Lagrangian relaxation of that
   count), with ``μ`` the incumbent's mean pair cost under the uniform weights (about what
   a real partner costs there). The price replaces the weights' search where the search
   would get too little time for a round (``PRICED_BELOW_SECONDS``). On 20,000 Adult rows
   at m = 7 the uniform weights give 8,700 unpriced and 12,423 priced on release 2 (A* =
   126; the pairs had made 15,729 pairings with counterfeits where ``K`` = 882), and 4,379
   and 11,463 on release 5 (A* = 343).

Costs are rounded down to integers (``SCALE`` units), which keeps the bound valid; rows
equal in every coordinate share one node. The weights' rounds run while the deadline
allows, when every pair was solved and at most ``STORED_LENGTHS`` pair extents are kept.
Measured on 20,000 Adult rows (release 2, against the 10 s release):

* m = 3 (16,928): the row bound 8,018; uniform weights 11,311 (gap 33 %), about 3 s;
  weights searched 13,376 after one round and 13,562 after twelve (gap 20 %), 3.3 s a
  round. In the uniform bound, education and native-country (trees where three leaves
  give ``r = 3`` and a line 2) lost most; the weights move them onto the pairs of values
  that pay.
* m = 5 (27,068): uniform 14,375 (gap 47 %) in 6 s; nine rounds 22,224 (gap 18 %), 35 s.
* m = 7 (31,381): four rounds 18,868 (gap 40 %), 30 s; 73M pair extents kept.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from republish.models.whole_release_capacity import Chain, budget
from republish.models.whole_release_counts import Extent, ReleaseCounts
from republish.models.whole_release_pair_network import (
    SCALE,
    Nodes,
    PairNetwork,
    Side,
    build_network,
    chain_lengths,
    nodes_of,
    qi_distances,
)
from republish.models.whole_release_pair_weights import LINE, improve_weights
from republish.models.whole_release_row_bound import _separable, row_bound
from republish.objectives import ReleaseCost

if TYPE_CHECKING:
    from republish.models.whole_release_problem import WholeReleaseProblem

__all__ = ["SCALE", "PairBound", "lower_bound_b", "pair_bound"]

#: Arcs of one transportation problem above which it is skipped (counts 0): 20,000 Adult
#: rows need at most ~0.9M (m = 3, 4; about 0.1 s each); a 200,000-row census far more.
MAX_ARCS = 4_000_000
#: Pair extents (arcs × QIs, 4 bytes each) kept for the weights' rounds at most, about
#: 400 MB: 20,000 Adult rows keep 23M at m = 3 and 47M at m = 5 (release 2).
STORED_LENGTHS = 100_000_000
#: Step 5 prices the pairings with counterfeits where the weights' rounds have less than
#: this many seconds from the bound's start (they then run no round). Priced networks
#: solve about 15 % slower and their flows make poor first cuts: on 20,000 Adult rows at
#: m = 7 with the 60 s budget's share (24 s), release 5 reached 12,016 priced against
#: 13,245 with unpriced rounds; with the 10 s share (4 s), 5,354 against 3,501.
PRICED_BELOW_SECONDS = 20.0
#: A priced pass is followed by an unpriced one with the weights searched when the weights'
#: time left is at least this many times what the priced pass took: on a later release of
#: 1,200 Adult rows at m = 3 ((a) = 1) the priced pass took 0.06 s (833.6), the search
#: 0.36 s (957.2); on 20,000 rows the priced pass takes seconds and the rule keeps it alone.
SEARCH_AFTER_PRICED = 10.0


@dataclass(frozen=True)
class PairBound:
    """``bound``: a lower bound on (b) over releases of (a) ``<= a_star``; ``per_pair``
    each pair of values' least cost (with step 5's price on counterfeits); ``fake_charge``
    what step 5 subtracts (``bound = max(Σ per_pair - fake_charge, 0)``); ``complete``:
    every pair was solved before the deadline (otherwise the missing pairs count 0);
    ``rounds``: proposals evaluated after the uniform weights (steps 4 and 5)."""

    bound: float
    per_pair: dict[tuple[int, int], float]
    complete: bool
    wall_time_s: float
    rounds: int = 0
    fake_charge: float = 0.0


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


def fake_pairings(signatures: list[list[int]], counterfeits: int,
                  pairs: Collection[tuple[int, int]] | None = None) -> float:
    """``K`` of step 5: at most how many pairings with counterfeits a release with
    ``counterfeits`` counterfeits makes over the pairs of values ``pairs`` (default: all).
    A counterfeit of ``v`` in bucket ``b`` is the partner of at most one old row of each
    other value of ``σ_b``, and counts only in the pairs ``(u, v)`` among ``pairs``
    (``signatures``: each bucket's values, empty without old rows)."""
    most = 0
    for sigma in signatures:
        for v in sigma:
            most = max(most, sum(1 for u in sigma if u != v and (
                pairs is None or (min(u, v), max(u, v)) in pairs)))
    return float(most * counterfeits)


def _pair_lengths(numeric: list[np.ndarray], chains: list[Chain], a: np.ndarray,
                  b: np.ndarray) -> np.ndarray:
    """``d_q`` of the row pairs ``(a[i], b[i])``, one column per QI (numeric, then chains)."""
    columns = [np.abs(x[a] - x[b]) for x in numeric] + [
        chain_lengths(chain, a, b) for chain in chains]
    return np.column_stack(columns) if columns else np.zeros((len(a), 0))


def pair_bound(problem: WholeReleaseProblem, extent: Extent | None = None,
               a_star: float | Fraction = 0, *, deadline: float = math.inf,
               weighted: bool = True, weights_deadline: float | None = None,
               groups: Sequence[np.ndarray] | None = None,
               then_search: bool = False, unpriced: bool = False) -> PairBound:
    """A lower bound on (b) over the releases of ``problem`` whose (a) is at most ``a_star``
    (pass A*, or any upper bound on it), by the argument of the module docstring; 0 for
    an extent that is not a separable perimeter. Past ``deadline``
    (``time.perf_counter()`` seconds) the remaining pairs of values count 0 and no weights
    are searched. The weights (step 4) are searched until ``weights_deadline`` (at most
    ``deadline``, its default); ``weighted=False`` keeps the uniform ones. ``groups``: a
    release (the incumbent) whose mean pair cost under the uniform weights prices the
    pairings with counterfeits (step 5) where the weights are not searched or would get
    less than PRICED_BELOW_SECONDS; without it they are free. With ``then_search``, a
    priced pass that took at most 1/SEARCH_AFTER_PRICED of the weights' time left is
    followed by an unpriced one with the weights searched (``unpriced``), and the larger
    bound stands (the model's final bound; a large release's search keeps that time)."""
    started = time.perf_counter()
    counts = ReleaseCounts.of(problem)
    cost_model = getattr(extent, "cost", None)
    ncp = False
    if isinstance(cost_model, ReleaseCost) and cost_model.name == "ncp":
        ncp = True
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
    new_nodes = {int(v): nodes_of(key, np.flatnonzero((bucket < 0) & (values == v)))
                 for v in np.unique(values[bucket < 0]).tolist()}
    distances = qi_distances(numeric, chains)
    ratios: dict[int, np.ndarray] = {}

    def uniform(s: int) -> np.ndarray:  # λ = 1 / r_q(s) per QI
        if s not in ratios:
            ratios[s] = 1.0 / np.array([float(_line_ratio(s))] * len(numeric) + [
                _chain_ratio(chain, s) for chain in chains])
        return ratios[s]

    signatures: list[list[int]] = []
    sides: dict[tuple[int, int], list[Side]] = {}
    for b, sigma in enumerate(problem.signatures):
        old = counts.old_rows[b]
        signatures.append(sorted(sigma) if len(old) else [])
        if not len(old):
            continue
        members = {v: nodes_of(key, old[values[old] == v]) for v in sorted(sigma)}
        fakes = {v: int(min(spare[b], len(old) - counts.k[b, v])) for v in sorted(sigma)}
        for u, v in itertools.combinations(sorted(sigma), 2):
            sides.setdefault((u, v), []).append(Side(b, members[u], members[v], fakes[u],
                                                     fakes[v]))
    start = np.zeros((len(signatures), len(distances)))
    for b, values_b in enumerate(signatures):
        if values_b:
            start[b] = len(values_b) * uniform(len(values_b))
    weights_until = deadline if weights_deadline is None else min(deadline, weights_deadline)
    most_fake = fake_pairings(signatures, cf_max)  # K of step 5
    # step 5 prices the uniform pass where the weights get no round (module docstring)
    may_search = weighted and not ncp
    priced = bool(most_fake) and not unpriced and (
        not may_search or weights_until - started < PRICED_BELOW_SECONDS)
    searched = may_search and not priced  # else the networks need not be kept
    price = _incumbent_price(problem, groups, numeric, chains, uniform) if priced else 0.0
    parts: dict[tuple[int, int], tuple[float, np.ndarray]] = {}
    kept: dict[tuple[int, int], PairNetwork] = {}
    stored = 0
    complete = True
    for (u, v), part in sides.items():
        if time.perf_counter() > deadline:
            complete = False
            break
        network = build_network(part, new_nodes.get(u, empty), new_nodes.get(v, empty),
                                cf_max, cf_max, distances, MAX_ARCS)
        solved = network.solve(start, price) if network is not None else None
        if network is None or solved is None:  # too large, or (a) <= a_star impossible
            complete = False
            continue
        parts[(u, v)] = solved
        stored += network.d.size
        if searched and stored <= STORED_LENGTHS:  # kept for the weights' rounds
            kept[(u, v)] = network
    per_pair = {pair: value for pair, (value, _) in parts.items()}
    rounds = 0
    if searched and complete and len(kept) == len(sides) and sides:
        kinds = [LINE] * len(numeric) + [
            len(np.unique(cells[0])) if not costs[0].any() else 2**31 for cells, costs in chains]
        search = improve_weights(kept, signatures, kinds, parts, deadline=weights_until)
        if search.bound > sum(per_pair.values()):
            per_pair, rounds = dict(search.per_pair), search.rounds
    # an interrupted pass counts only the pairings of the pairs of values it solved
    charge = price * (most_fake if complete else fake_pairings(signatures, cf_max, parts))
    found = PairBound(max(float(sum(per_pair.values())) - charge, 0.0), per_pair, complete,
                      time.perf_counter() - started, rounds, charge)
    if then_search and priced and may_search and complete and \
            SEARCH_AFTER_PRICED * found.wall_time_s <= weights_until - time.perf_counter():
        searched_too = pair_bound(problem, extent, a_star, deadline=deadline,
                                  weights_deadline=weights_until, unpriced=True)
        if searched_too.complete and searched_too.bound > found.bound:
            return dataclasses.replace(searched_too,
                                       wall_time_s=time.perf_counter() - started)
    return found


def _incumbent_price(problem: WholeReleaseProblem, groups: Sequence[np.ndarray] | None,
                     numeric: list[np.ndarray], chains: list[Chain],
                     uniform: Callable[[int], np.ndarray]) -> float:
    """The mean cost, under the uniform weights, of the pairs of real rows in the groups
    of ``groups`` that hold old rows (0 without any): step 5's price of a pairing with a
    counterfeit, about what a real partner costs there."""
    first: list[np.ndarray] = []
    second: list[np.ndarray] = []
    scale: list[np.ndarray] = []
    for group in groups or ():
        rows = np.asarray(group, dtype=np.int64)
        olds = problem.bucket[rows]
        if len(rows) < 2 or not (olds >= 0).any():
            continue
        s = len(problem.signatures[int(olds[olds >= 0][0])])
        a, b = np.triu_indices(len(rows), 1)
        first.append(rows[a])
        second.append(rows[b])
        scale.append(np.broadcast_to(s * uniform(s), (len(a), len(numeric) + len(chains))))
    if not first:
        return 0.0
    lengths = _pair_lengths(numeric, chains, np.concatenate(first), np.concatenate(second))
    return float((lengths * np.concatenate(scale)).sum(axis=1).mean())


def lower_bound_b(problem: WholeReleaseProblem, extent: Extent | None, a_star: float | Fraction,
                  weight: Fraction | None = None, *, deadline: float = math.inf,
                  weights_deadline: float | None = None,
                  groups: Sequence[np.ndarray] | None = None,
                  then_search: bool = False) -> float:
    """The larger of the row bound (:func:`republish.models.whole_release_row_bound.
    row_bound`) and the pair bound on (b), over the releases of (a) ``<= a_star``; the
    pair bound gets what is left until ``deadline``, its weights until
    ``weights_deadline``, and prices counterfeits from ``groups`` (:func:`pair_bound`,
    with ``then_search``)."""
    rows = row_bound(problem, extent, a_star, weight, deadline=deadline).bound
    if time.perf_counter() >= deadline:
        return rows
    return max(rows, pair_bound(problem, extent, a_star, deadline=deadline,
                                weights_deadline=weights_deadline, groups=groups,
                                then_search=then_search).bound)
