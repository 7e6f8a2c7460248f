"""One record's Sensitive-attribute Update Graph (SUG) as a networkx graph.

The definitions and the weights are those of :mod:`republish.audit.sug` (Li & Zhou,
§III, Definitions 10-11, eqs. 1-2): :func:`build_sug` draws a record's SUG from the
candidate values of its versions, :func:`feasible_sub_sug` prunes it, and
:func:`feasible_paths`, :func:`node_shares` and :func:`disclosure_risks` weigh its paths.

Separate from :mod:`republish.audit.sug`, which runs the same computation for every
individual of a release sequence at once on arrays, because this is the reference form:
one small graph, every path explicit, as in the paper's examples. Every name here is also
importable from :mod:`republish.audit.sug`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import networkx as nx

from republish.errors import InputError, ParameterError
from republish.transitions import TransitionModel

__all__ = [
    "WEIGHTINGS",
    "Node",
    "Weighting",
    "build_sug",
    "disclosure_risks",
    "feasible_paths",
    "feasible_sub_sug",
    "node_shares",
]

Weighting = Literal["random-world", "probabilities"]
WEIGHTINGS: tuple[str, ...] = ("random-world", "probabilities")
Node = tuple[int, str]


def build_sug(
    candidate_sets: Sequence[Iterable[str]],
    model: TransitionModel,
    releases: Sequence[int] | None = None,
) -> nx.DiGraph:
    """A record's SUG (Definition 10): node ``(i, value)`` per candidate value of version
    ``i`` (0-based), edge when the model allows the update. ``releases[i]`` is the release
    number of version ``i`` (default ``1..I``); with probabilities, edges carry
    ``probability`` = ``P_trans`` over the periods between the two versions."""
    layers = [sorted({str(v) for v in values}) for values in candidate_sets]
    numbers = list(releases) if releases is not None else list(range(1, len(layers) + 1))
    increasing = all(a < b for a, b in zip(numbers, numbers[1:], strict=False))
    if len(numbers) != len(layers) or not increasing:
        raise InputError("give one increasing release number per version.")
    graph = nx.DiGraph()
    for i, layer in enumerate(layers):
        graph.add_nodes_from(((i, v) for v in layer), layer=i, release=numbers[i])
    for i in range(len(layers) - 1):
        pair = sorted(set(layers[i]) | set(layers[i + 1]))
        steps = numbers[i + 1] - numbers[i]
        matrix = model.probabilities(pair, steps) if model.probabilistic else None
        position = {v: k for k, v in enumerate(pair)}
        for v in layers[i]:
            for u in layers[i + 1]:
                if model.allows(v, u):
                    p = None if matrix is None else float(matrix[position[v], position[u]])
                    graph.add_edge((i, v), (i + 1, u), probability=p)
    return graph


def _layer_count(graph: nx.DiGraph) -> int:
    return 1 + max((data["layer"] for _, data in graph.nodes(data=True)), default=-1)


def feasible_sub_sug(graph: nx.DiGraph) -> nx.DiGraph:
    """Definition 11: repeatedly delete first-layer nodes without successors, last-layer
    nodes without predecessors and middle nodes lacking either."""
    sub = graph.copy()
    last = _layer_count(graph) - 1
    if last <= 0:
        return sub
    while True:
        doomed = [
            node for node, data in sub.nodes(data=True)
            if (data["layer"] < last and sub.out_degree(node) == 0)
            or (data["layer"] > 0 and sub.in_degree(node) == 0)
        ]
        if not doomed:
            return sub
        sub.remove_nodes_from(doomed)


def _weights(
    sub: nx.DiGraph, weighting: Weighting
) -> tuple[dict[Node, float], dict[tuple[Node, Node], float]]:
    sizes: dict[int, int] = {}
    for _, data in sub.nodes(data=True):
        sizes[data["layer"]] = sizes.get(data["layer"], 0) + 1
    node_weight = {node: 1.0 / sizes[data["layer"]] for node, data in sub.nodes(data=True)}
    edge_weight = {}
    for tail, head, data in sub.edges(data=True):
        if weighting == "probabilities":
            edge_weight[(tail, head)] = float(data["probability"])
        else:
            edge_weight[(tail, head)] = 1.0 / sub.out_degree(tail)
    return node_weight, edge_weight


def feasible_paths(
    sub: nx.DiGraph,
    weighting: Weighting = "random-world",
    limit: int = 100_000,
) -> list[tuple[tuple[Node, ...], float]]:
    """Every feasible path of a feasible sub-SUG, top to bottom, with its weight (eq. 1).

    Raises
    ------
    ParameterError
        when more than ``limit`` paths exist (use :func:`disclosure_risks`).
    """
    node_weight, edge_weight = _weights(sub, weighting)
    last = _layer_count(sub) - 1
    starts = sorted(n for n, d in sub.nodes(data=True) if d["layer"] == 0)
    paths: list[tuple[tuple[Node, ...], float]] = []

    def walk(path: list[Node], weight: float) -> None:
        node = path[-1]
        if node[0] == last:
            if len(paths) >= limit:
                raise ParameterError(f"more than {limit} feasible paths; use disclosure_risks.")
            paths.append((tuple(path), weight))
            return
        for head in sorted(sub.successors(node)):
            walk([*path, head], weight * edge_weight[(node, head)] * node_weight[head])

    for start in starts:
        walk([start], node_weight[start])
    return paths


def node_shares(sub: nx.DiGraph, weighting: Weighting = "random-world") -> dict[Node, float]:
    """Weight share of the feasible paths through every node (eq. 2 for that node)."""
    node_weight, edge_weight = _weights(sub, weighting)
    last = _layer_count(sub) - 1
    layers: dict[int, list[Node]] = {}
    for node, data in sub.nodes(data=True):
        layers.setdefault(data["layer"], []).append(node)
    forward: dict[Node, float] = {}
    for i in range(last + 1):
        for node in layers.get(i, []):
            incoming = sum(forward[p] * edge_weight[(p, node)] for p in sub.predecessors(node))
            forward[node] = node_weight[node] * (incoming if i > 0 else 1.0)
    backward: dict[Node, float] = {}
    for i in range(last, -1, -1):
        for node in layers.get(i, []):
            backward[node] = 1.0 if i == last else sum(
                edge_weight[(node, s)] * node_weight[s] * backward[s] for s in sub.successors(node)
            )
    total = sum(forward[n] for n in layers.get(last, []))
    if total <= 0:
        return dict.fromkeys(sub.nodes, 0.0)
    return {node: forward[node] * backward[node] / total for node in sub.nodes}


def disclosure_risks(
    sub: nx.DiGraph, truth: Sequence[str], weighting: Weighting = "random-world"
) -> tuple[float, ...]:
    """``r(t'_i)`` of every version (eq. 2): the share at the true value (0 when pruned)."""
    shares = node_shares(sub, weighting)
    return tuple(shares.get((i, str(v)), 0.0) for i, v in enumerate(truth))
