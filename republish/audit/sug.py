"""The SUG attack: Sensitive-attribute Update Graphs (Li & Zhou, §III).

For a record ``t`` with versions ``t'_1, ..., t'_I`` in the releases containing it, the
adversary draws its SUG (Definition 10): one node per candidate value of every version
(layer ``V_i`` = the values of the QI groups covering ``t'_i``), and an edge from ``v`` in
``V_i`` to ``u`` in ``V_{i+1}`` when ``v`` may update to ``u`` (``u ∈ CUS(v)``). Pruning
nodes without predecessors or successors until none is left gives the feasible sub-SUG
(Definition 11): its nodes are exactly those on a path through every layer. A path's
weight is the product of its node and edge weights (eq. 1) and the disclosure risk of
version ``i`` is the weight share of the paths through the true value (eq. 2); it is 1
exactly when ``|V'_i| = 1`` (Lemma 2).

Weights. ``random-world`` (Example 3): the surviving values of a layer are equally likely
(node weight ``1/|V'_i|``) and so are the surviving updates of a value (edge weight
``1/deg⁺(v)`` in the feasible sub-SUG); this reproduces Example 4. ``probabilities``: edge
weight ``P_trans`` of the model raised to the number of periods between the versions.

:func:`build_sug`, :func:`feasible_sub_sug`, :func:`feasible_paths` and
:func:`disclosure_risks` work on one record's networkx graph (in
:mod:`republish.audit.sug_graph`, re-exported here); :func:`sug_attack` runs the same
computation for every individual of a release sequence at once (forward/backward sums
over layers instead of path enumeration).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from republish.audit.intersection import intersection_attack
from republish.audit.knowledge import Knowledge
from republish.audit.sug_graph import (
    WEIGHTINGS,
    Weighting,
    build_sug,
    disclosure_risks,
    feasible_paths,
    feasible_sub_sug,
    node_shares,
)
from republish.audit.sug_graph import Node as Node
from republish.audit.sug_graph import _layer_count as _layer_count
from republish.audit.sug_graph import _weights as _weights
from republish.errors import ParameterError
from republish.release import GROUP, Release
from republish.transitions import TransitionModel

__all__ = [
    "SugAudit",
    "Weighting",
    "build_sug",
    "disclosure_risks",
    "feasible_paths",
    "feasible_sub_sug",
    "node_shares",
    "sug_attack",
    "sug_attack_groups",
]


def _check_weighting(weighting: str, model: TransitionModel | None) -> None:
    if weighting not in WEIGHTINGS:
        raise ParameterError(f"weighting={weighting!r}: use one of {list(WEIGHTINGS)}.")
    if weighting == "probabilities" and (model is None or not model.probabilistic):
        raise ParameterError(
            "weighting 'probabilities' needs a transition model with probabilities; use "
            "'random-world' or give a probability column."
        )


@dataclass(frozen=True)
class SugAudit:
    """The SUG attack on every version of every individual (arrays over versions, sorted
    by individual then release).

    ``candidate_sizes`` are ``|V_i|``, ``feasible_sizes`` ``|V'_i|`` (0: the releases
    contradict the knowledge), ``risk`` eq. 2 at the true value (NaN without truth),
    ``max_share`` the largest share any value of the version gets.
    """

    values: tuple[str, ...]
    identifiers: np.ndarray
    releases: np.ndarray
    candidate_sizes: np.ndarray
    feasible_sizes: np.ndarray
    risk: np.ndarray
    max_share: np.ndarray
    weighting: str

    @property
    def vulnerable(self) -> np.ndarray:
        """Lemma 2: versions whose feasible layer holds one value (risk 1)."""
        return self.feasible_sizes == 1

    @property
    def vulnerable_ids(self) -> list[str]:
        return sorted({str(i) for i in self.identifiers[self.vulnerable]})

    @property
    def inconsistent_ids(self) -> list[str]:
        return sorted({str(i) for i in self.identifiers[self.feasible_sizes == 0]})

    def individuals(self) -> int:
        return len(set(self.identifiers.tolist()))

    def size_distribution(self) -> dict[int, int]:
        """Smallest ``|V'_i|`` of each individual -> number of individuals."""
        if not len(self.identifiers):
            return {}
        smallest = pd.Series(self.feasible_sizes).groupby(self.identifiers).min()
        counts = smallest.value_counts().sort_index()
        return {int(k): int(v) for k, v in counts.items()}

    def max_risk(self) -> float | None:
        known = self.risk[~np.isnan(self.risk)]
        return float(known.max()) if len(known) else None

    def vulnerable_by_release(self) -> dict[int, int]:
        numbers, counts = np.unique(self.releases[self.vulnerable], return_counts=True)
        return {int(n): int(c) for n, c in zip(numbers, counts, strict=True)}


def _versions(knowledge: Knowledge, rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """(audit row index, release index) of every version, sorted by identifier, release."""
    presence = knowledge.presence[rows]
    row_index, release_index = np.nonzero(presence)
    identifiers = knowledge.identifiers[rows][row_index].astype(str)
    order = np.lexsort((release_index, identifiers))
    return row_index[order], release_index[order], identifiers[order]


def _layers(identifiers: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position of each version in its individual's sequence, previous and next version."""
    count = len(identifiers)
    starts = np.r_[True, identifiers[1:] != identifiers[:-1]] if count else np.zeros(0, bool)
    first = np.maximum.accumulate(np.where(starts, np.arange(count), 0)) if count else starts
    position = np.arange(count) - first
    previous = np.where(starts, -1, np.arange(count) - 1)
    ends = np.r_[starts[1:], True] if count else starts
    following = np.where(ends, -1, np.arange(count) + 1)
    return position, previous, following


def sug_attack(
    releases: Sequence[pd.DataFrame | Release],
    knowledge: Knowledge,
    model: TransitionModel,
    weighting: Weighting = "random-world",
) -> SugAudit:
    """Run the SUG attack on ``T*(1..n)`` with the adversary's knowledge ``B(n)``.

    A version's candidate values are those of every group whose box covers its exact QIs
    (as in the intersection attack); knowledge rows sharing an identifier are versions of
    one individual (their releases must be disjoint). True values, when the knowledge
    carries them, give ``risk``.
    """
    _check_weighting(weighting, model)
    audit = intersection_attack(releases, knowledge, keep_per_release=True)
    values = audit.values
    width = len(values)
    row_of, release_of, identifiers = _versions(knowledge, audit.rows)
    candidates = np.zeros((len(row_of), width), dtype=bool)
    for j, masks in enumerate(audit.per_release):
        chosen = release_of == j
        bits = np.unpackbits(masks[row_of[chosen]].view(np.uint8), axis=1, bitorder="little")
        candidates[chosen] = bits[:, :width].astype(bool)
    truth = None
    if knowledge.has_truth:
        lookup = {v: k for k, v in enumerate(values)}
        known = knowledge.truth
        assert known is not None
        truth = np.array([lookup.get(str(known[audit.rows[r]]), -1) for r in row_of.tolist()],
                         dtype=np.int64)
    return _attack(values, identifiers, release_of + 1, candidates, truth, model, weighting)


def sug_attack_groups(
    releases: Sequence[Release],
    model: TransitionModel,
    weighting: Weighting = "random-world",
) -> SugAudit:
    """The SUG attack by an adversary who knows each version's QI group, as in the
    paper's examples ("Ben must be in group 3 of both releases"): candidate values are
    those of the hosting group. Uses the releases' private assignments (publisher's
    worst-case audit); the releases' ``number`` gives the periods between versions."""
    _check_weighting(weighting, model)
    values = tuple(sorted({str(v) for r in releases
                           for v in r.published[r.schema.sensitive].astype(str).unique()}))
    lookup = {v: k for k, v in enumerate(values)}
    ids, numbers, truths, masks = [], [], [], []
    for release in releases:
        schema = release.schema
        codes = release.published[schema.sensitive].astype(str).map(lookup).to_numpy()
        labels, group_index = np.unique(release.published[GROUP].to_numpy(),
                                        return_inverse=True)
        by_group = np.zeros((len(labels), len(values)), dtype=bool)
        by_group[group_index, codes] = True
        row_group = np.searchsorted(labels, release.assignment[GROUP].to_numpy())
        ids.append(release.assignment[schema.identifier].astype(str).to_numpy(dtype=object))
        numbers.append(np.full(len(row_group), release.number, dtype=np.int64))
        truths.append(release.assignment[schema.sensitive].astype(str).map(lookup).to_numpy(
            dtype=np.int64))
        masks.append(by_group[row_group])
    identifiers = np.concatenate(ids) if ids else np.zeros(0, dtype=object)
    number = np.concatenate(numbers) if numbers else np.zeros(0, dtype=np.int64)
    order = np.lexsort((number, identifiers.astype(str)))
    candidates = np.concatenate(masks)[order] if masks else np.zeros((0, len(values)), bool)
    return _attack(values, identifiers[order], number[order], candidates,
                   np.concatenate(truths)[order], model, weighting)


def _attack(
    values: tuple[str, ...], identifiers: np.ndarray, numbers: np.ndarray,
    candidates: np.ndarray, truth: np.ndarray | None, model: TransitionModel,
    weighting: Weighting,
) -> SugAudit:
    """Definitions 10-11 and eqs. 1-2 on all versions at once (sorted by individual, then
    release): feasible layers by a forward and a backward reachability pass, path-weight
    shares by forward (α) and backward (β) sums, rescaled per version (only shares within
    a version matter)."""
    width = len(values)
    position, previous, following = _layers(identifiers)
    reach = model.reachability(values).astype(np.float64)
    forward = candidates.copy()
    depth = int(position.max()) + 1 if len(position) else 0
    for p in range(1, depth):
        at = np.flatnonzero(position == p)
        forward[at] &= (forward[previous[at]] @ reach) > 0
    backward = candidates.copy()
    for p in range(depth - 2, -1, -1):
        at = np.flatnonzero((position == p) & (following >= 0))
        backward[at] &= (backward[following[at]] @ reach.T) > 0
    alive = forward & backward
    counts = alive.sum(axis=1)
    node = np.where(counts[:, None] > 0, alive / np.maximum(counts, 1)[:, None], 0.0)
    gaps = np.where(previous >= 0, numbers - numbers[np.maximum(previous, 0)], 0)
    powers = {int(g): model.probabilities(values, int(g)) for g in np.unique(gaps[gaps > 0])}
    outdegree = np.zeros_like(node)
    if weighting == "random-world":
        # out-degree in the feasible sub-SUG of every value of the previous version
        has_prev = previous >= 0
        outdegree[previous[has_prev]] = alive[has_prev].astype(np.float64) @ reach.T
    alpha = node.copy()
    for p in range(1, depth):
        at = np.flatnonzero(position == p)
        before = alpha[previous[at]]
        if weighting == "random-world":
            degree = outdegree[previous[at]]
            carried = np.divide(before, degree, out=np.zeros_like(before), where=degree > 0) @ reach
        else:
            carried = np.zeros_like(before)
            for gap, matrix in powers.items():
                mine = gaps[at] == gap
                carried[mine] = before[mine] @ matrix
        alpha[at] = _normalized(carried * node[at])
    beta = np.where(alive, 1.0, 0.0)
    for p in range(depth - 2, -1, -1):
        at = np.flatnonzero((position == p) & (following >= 0))
        after = beta[following[at]] * node[following[at]]
        if weighting == "random-world":
            degree = outdegree[at]
            pulled = np.divide(after @ reach.T, degree, out=np.zeros_like(after), where=degree > 0)
        else:
            pulled = np.zeros_like(after)
            for gap, matrix in powers.items():
                mine = gaps[following[at]] == gap
                pulled[mine] = after[mine] @ matrix.T
        beta[at] = _normalized(pulled * alive[at])
    shares = _normalized(alpha * beta)
    risk = np.full(len(identifiers), np.nan)
    if truth is not None:
        known = (truth >= 0) & (counts > 0)
        risk[known] = shares[np.flatnonzero(known), truth[known]]
        risk[(truth < 0) & (counts > 0)] = 0.0
    return SugAudit(
        values=values,
        identifiers=np.asarray(identifiers, dtype=object),
        releases=np.asarray(numbers, dtype=np.int64),
        candidate_sizes=candidates.sum(axis=1).astype(np.int64),
        feasible_sizes=counts.astype(np.int64),
        risk=risk,
        max_share=shares.max(axis=1) if width else np.zeros(len(identifiers)),
        weighting=weighting,
    )


def _normalized(weights: np.ndarray) -> np.ndarray:
    """Rows scaled to sum 1 (zero rows stay zero): only shares within a version matter."""
    totals = weights.sum(axis=1, keepdims=True)
    return np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)
