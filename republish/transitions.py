"""The public model of internal updates: transitions, CUS, USS, legal update instances.

Li & Zhou, "Challenging More Updates" (the m-Distinct paper), §IV-A:

* a *transition relation* over sensitive values says which value may become which between
  two versions of a record (a directed graph, optionally with probabilities ``P_trans``);
* the *candidate update set* ``CUS(a)`` (Definition 12) is every value reachable from ``a``,
  ``a`` included, so ``b ∈ CUS(a)`` implies ``CUS(b) ⊆ CUS(a)``;
* the *update set signature* ``USS(g)`` of a QI group (Definition 13) is the multiset of the
  CUS of its values; legal update instances (Definition 14) and the relations between USSs
  (intersectable, implies) are in :mod:`republish.uss` and importable from here.

With probabilities, ``P_trans(a, ·)`` is the distribution of the next version's value; its
support must be exactly ``CUS(a)`` (the paper's premise that CUS is closed under updates),
and an unlisted self-transition takes the remaining mass. Values the model does not name
cannot change (``CUS(v) = {v}``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from republish.errors import InputError, ParameterError
from republish.uss import (
    UpdateSetSignature,
    canonical_uss,
    has_representatives,
    implies,
    intersectable,
    intersection_plan,
    is_legal_update_instance,
    legal_update_problems,
    pairwise_disjoint,
    representable_values,
)

__all__ = [
    "UpdateSetSignature",
    "TransitionModel",
    "canonical_uss",
    "has_representatives",
    "implies",
    "intersectable",
    "intersection_plan",
    "is_legal_update_instance",
    "legal_update_problems",
    "pairwise_disjoint",
    "read_transitions",
    "representable_values",
    "update_set_signature",
]

_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class TransitionModel:
    """A public transition relation over sensitive values and its reachability sets.

    Build one with :meth:`from_edges`, :meth:`from_graph`, :meth:`identity` or
    :func:`read_transitions`. ``edges`` keeps the relation as given (self-transitions
    implicit); ``probabilistic`` tells whether every edge carries a probability.
    """

    values: tuple[str, ...]
    edges: tuple[tuple[str, str, float | None], ...]
    probabilistic: bool
    _cus: Mapping[str, frozenset[str]] = field(repr=False)
    _probability: Mapping[str, Mapping[str, float]] = field(repr=False)

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_edges(
        cls,
        edges: Iterable[Sequence[Any]],
        values: Iterable[str] = (),
    ) -> TransitionModel:
        """A model from ``(from, to)`` or ``(from, to, probability)`` items.

        ``values`` adds values without transitions. Either every edge has a probability
        or none has.

        Raises
        ------
        ParameterError
            on malformed edges, mixed or out-of-range probabilities, or probabilities
            whose support is not the reachability set (see the module docstring).
        """
        graph = nx.DiGraph()
        graph.add_nodes_from(str(v).strip() for v in values)
        with_probability = 0
        items = list(edges)
        for index, edge in enumerate(items):
            if len(edge) not in (2, 3):
                raise ParameterError(
                    f"transition {index + 1} {tuple(edge)!r}: give (from, to) or "
                    "(from, to, probability)."
                )
            source, target = str(edge[0]).strip(), str(edge[1]).strip()
            if not source or not target:
                raise ParameterError(f"transition {index + 1} names an empty value.")
            probability = None
            if len(edge) == 3 and edge[2] is not None and str(edge[2]).strip() != "":
                try:
                    probability = float(edge[2])
                except (TypeError, ValueError) as exc:
                    raise ParameterError(
                        f"transition {index + 1} ({source} -> {target}): probability "
                        f"{edge[2]!r} is not a number."
                    ) from exc
                if not 0.0 < probability <= 1.0:
                    raise ParameterError(
                        f"transition {index + 1} ({source} -> {target}): probability "
                        f"{probability} must lie in (0, 1]; leave impossible updates out."
                    )
                with_probability += 1
            if graph.has_edge(source, target):
                raise ParameterError(f"transition {source} -> {target} is listed twice.")
            graph.add_edge(source, target, probability=probability)
        if 0 < with_probability < len(items):
            raise ParameterError(
                f"{with_probability} of {len(items)} transitions have a probability; give "
                "one for every transition or for none (random-world weights)."
            )
        return cls._build(graph, probabilistic=bool(items) and with_probability == len(items))

    @classmethod
    def from_graph(cls, graph: nx.DiGraph, values: Iterable[str] = ()) -> TransitionModel:
        """A model from a networkx DiGraph (optional edge attribute ``probability``)."""
        if not isinstance(graph, nx.DiGraph):
            raise ParameterError("the transition relation must be a networkx DiGraph.")
        edges = [(u, v, data.get("probability")) for u, v, data in graph.edges(data=True)]
        return cls.from_edges(edges, [*map(str, graph.nodes), *values])

    @classmethod
    def identity(cls, values: Iterable[str]) -> TransitionModel:
        """No value ever changes: m-Distinct becomes m-invariance."""
        return cls.from_edges([], values)

    @classmethod
    def _build(cls, graph: nx.DiGraph, probabilistic: bool) -> TransitionModel:
        values = tuple(sorted(str(v) for v in graph.nodes))
        cus = {v: frozenset({v, *nx.descendants(graph, v)}) for v in values}
        edges = tuple(
            sorted((str(u), str(v), data.get("probability")) for u, v, data in
                   graph.edges(data=True))
        )
        probability: dict[str, dict[str, float]] = {}
        if probabilistic:
            for value in values:
                row = {str(t): float(graph.edges[value, t]["probability"])
                       for t in graph.successors(value)}
                listed = sum(p for t, p in row.items() if t != value)
                if listed > 1.0 + _TOLERANCE:
                    raise ParameterError(
                        f"the probabilities out of {value!r} sum to {listed:.6g} > 1."
                    )
                row.setdefault(value, max(0.0, 1.0 - listed))
                total = sum(row.values())
                support = frozenset(t for t, p in row.items() if p > _TOLERANCE)
                if abs(total - 1.0) > 1e-6:
                    raise ParameterError(
                        f"the probabilities out of {value!r} sum to {total:.6g}; they must sum "
                        "to 1 (an unlisted self-transition takes the remainder)."
                    )
                if support != cus[value]:
                    missing = sorted(cus[value] - support)
                    raise ParameterError(
                        f"value {value!r} can reach {missing} through other values but has no "
                        f"probability of becoming them (or of staying {value!r}); with "
                        "probabilities the relation must list every reachable value "
                        "(P_trans is the update probability between two versions)."
                    )
                probability[value] = row
        return cls(values=values, edges=edges, probabilistic=probabilistic, _cus=cus,
                   _probability=probability)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (kept in the release store)."""
        return {"values": list(self.values), "edges": [list(e) for e in self.edges]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TransitionModel:
        return cls.from_edges([tuple(e) for e in data.get("edges", [])], data.get("values", []))

    # -- queries --------------------------------------------------------------------------

    def cus(self, value: str) -> frozenset[str]:
        """``CUS(value)`` (Definition 12); ``{value}`` for a value the model does not name."""
        return self._cus.get(value, frozenset({value}))

    def is_identity(self) -> bool:
        return all(len(c) == 1 for c in self._cus.values())

    def allows(self, before: str, after: str) -> bool:
        """Whether a value ``before`` may become ``after`` between two versions."""
        return after in self.cus(before)

    def uss(self, values: Iterable[str]) -> UpdateSetSignature:
        """``USS`` of a group holding ``values`` (Definition 13)."""
        return update_set_signature(values, self)

    def graph(self) -> nx.DiGraph:
        """The relation as a networkx DiGraph (self-transitions left implicit)."""
        graph = nx.DiGraph()
        graph.add_nodes_from(self.values)
        for source, target, probability in self.edges:
            graph.add_edge(source, target, probability=probability)
        return graph

    def reachability(self, values: Sequence[str]) -> np.ndarray:
        """``R[i, j]``: ``values[j] ∈ CUS(values[i])``."""
        index = {v: i for i, v in enumerate(values)}
        matrix = np.zeros((len(values), len(values)), dtype=bool)
        for i, value in enumerate(values):
            for target in self.cus(value):
                if target in index:
                    matrix[i, index[target]] = True
        return matrix

    def probabilities(self, values: Sequence[str], steps: int = 1) -> np.ndarray:
        """``P_trans`` over ``values`` after ``steps`` periods (a Markov chain's power).

        Without probabilities, the random world: uniform over ``CUS(a)``.
        """
        if steps < 1:
            raise ParameterError(f"steps={steps}: at least one period separates two versions.")
        index = {v: i for i, v in enumerate(values)}
        matrix = np.zeros((len(values), len(values)))
        for i, value in enumerate(values):
            if self.probabilistic and value in self._probability:
                row = self._probability[value]
            else:
                targets = self.cus(value)
                row = {t: 1.0 / len(targets) for t in targets}
            for target, p in row.items():
                if target in index:
                    matrix[i, index[target]] = p
        return np.linalg.matrix_power(matrix, steps)

    def conflict_components(self, values: Iterable[str]) -> dict[str, int]:
        """Component of every value in the graph "CUS overlap": values of different
        components have disjoint CUS (the §IV-B extension's sufficient rule)."""
        chosen = sorted(set(values))
        graph = nx.Graph()
        graph.add_nodes_from(chosen)
        owners: dict[str, list[str]] = {}
        for value in chosen:
            for member in self.cus(value):
                owners.setdefault(member, []).append(value)
        for sharing in owners.values():
            graph.add_edges_from((sharing[0], other) for other in sharing[1:])
        components = sorted(nx.connected_components(graph), key=lambda c: min(c))
        return {value: k for k, component in enumerate(components) for value in component}


def read_transitions(path: str | Path, values: Iterable[str] = ()) -> TransitionModel:
    """Read ``T.csv`` with columns ``from,to`` and optionally ``probability``.

    Raises
    ------
    InputError
        when the file is missing or lacks the columns; :class:`ParameterError` (from
        :meth:`TransitionModel.from_edges`) on bad transitions.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"transition file {str(path)!r} not found.")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields = [str(f).strip() for f in reader.fieldnames or []]
        if "from" not in fields or "to" not in fields:
            raise InputError(
                f"{path}: needs a header with columns 'from,to' (and optionally "
                f"'probability'); found {fields}."
            )
        rows = []
        for line, row in enumerate(reader, start=2):
            clean = {str(k).strip(): (v or "").strip() for k, v in row.items() if k is not None}
            if not clean.get("from") and not clean.get("to"):
                continue
            if not clean.get("from") or not clean.get("to"):
                raise InputError(f"{path}, line {line}: both 'from' and 'to' are needed.")
            rows.append((clean["from"], clean["to"], clean.get("probability") or None))
    try:
        return TransitionModel.from_edges(rows, values)
    except ParameterError as exc:
        raise InputError(f"{path}: {exc}") from exc


def update_set_signature(values: Iterable[str], model: TransitionModel) -> UpdateSetSignature:
    """The multiset ``{CUS(s) : s ∈ values}`` (repeated values repeat their CUS)."""
    return canonical_uss(model.cus(str(v)) for v in values)
