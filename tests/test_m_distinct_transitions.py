"""Transition model, CUS, USS and their relations (Li & Zhou, Definitions 12-14)."""

from __future__ import annotations

import itertools
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.errors import InputError, ParameterError
from republish.transitions import (
    TransitionModel,
    canonical_uss,
    has_representatives,
    implies,
    intersectable,
    intersection_plan,
    is_legal_update_instance,
    read_transitions,
    representable_values,
)
from republish.updates import block_transitions

VALUES = ["a", "b", "c", "d", "e", "f"]
value = st.sampled_from(VALUES)
edges = st.lists(st.tuples(value, value).filter(lambda e: e[0] != e[1]), max_size=10,
                 unique=True)
value_sets = st.frozensets(value, min_size=1, max_size=3)


@settings(max_examples=50, deadline=None)
@given(edges)
def test_cus_is_reachability_and_closed(relation: list[tuple[str, str]]) -> None:
    model = TransitionModel.from_edges(relation, VALUES)
    graph = nx.DiGraph(relation)
    for a in VALUES:
        expected = {a} | (nx.descendants(graph, a) if a in graph else set())
        assert model.cus(a) == expected
        for b in model.cus(a):
            assert model.cus(b) <= model.cus(a)  # Definition 12's note
    reach = model.reachability(VALUES)
    assert reach.diagonal().all()
    rows = model.probabilities(VALUES)
    assert np.allclose(rows.sum(axis=1), 1.0)
    assert ((rows > 0) == reach).all()


def _brute_matchings(first: tuple[frozenset[str], ...], second: tuple[frozenset[str], ...],
                     ok: object) -> list[tuple[int, ...]]:
    if len(first) != len(second):
        return []
    return [p for p in itertools.permutations(range(len(second)))
            if all(ok(first[i], second[p[i]]) for i in range(len(first)))]  # type: ignore


@settings(max_examples=80, deadline=None)
@given(st.lists(value_sets, min_size=1, max_size=4), st.lists(value_sets, min_size=1,
                                                              max_size=4))
def test_relations_match_brute_force(a: list[frozenset[str]], b: list[frozenset[str]]) -> None:
    first, second = canonical_uss(a), canonical_uss(b)
    meets = _brute_matchings(first, second, lambda x, y: bool(x & y))
    assert intersectable(first, second) == bool(meets)
    assert implies(first, second) == bool(_brute_matchings(first, second, lambda x, y: y <= x))
    plan = intersection_plan(first, second)
    if meets:
        def score(p: tuple[int, ...]) -> float:
            return sum(len(first[i] & second[p[i]]) / len(first[i] | second[p[i]])
                       for i in range(len(first)))
        best = max(score(p) for p in meets)
        assert plan is not None and len(plan) == len(first)
        assert any(canonical_uss(first[i] & second[p[i]] for i in range(len(first))) == plan
                   and score(p) == pytest.approx(best) for p in meets)
        assert implies(first, plan) and implies(second, plan)
    else:
        assert plan is None
    union = sorted(frozenset().union(*first))
    systems = [choice for choice in itertools.product(*[sorted(e) for e in first])
               if len(set(choice)) == len(choice)]
    assert has_representatives(first) == bool(systems)
    assert representable_values(first) == frozenset(v for s in systems for v in s)
    for chosen in itertools.combinations(union, len(first)):
        legal = is_legal_update_instance(chosen, first)
        covered = all(any(v in e for e in first) for v in chosen) and all(
            any(v in e for v in chosen) for e in first)
        assert legal == covered


def test_legal_update_instance_needs_the_same_size() -> None:
    uss = canonical_uss([{"a", "b"}, {"c"}])
    assert is_legal_update_instance(["b", "c"], uss)
    assert not is_legal_update_instance(["a", "b", "c"], uss)
    assert not is_legal_update_instance(["a", "b"], uss)  # {c} holds no value


def test_probabilities_are_validated() -> None:
    model = TransitionModel.from_edges([("a", "b", 0.3), ("b", "a", 0.5)])
    assert model.probabilistic
    assert model.probabilities(["a", "b"]) == pytest.approx(np.array([[0.7, 0.3], [0.5, 0.5]]))
    assert model.probabilities(["a", "b"], 2)[0, 0] == pytest.approx(0.7 * 0.7 + 0.3 * 0.5)
    with pytest.raises(ParameterError, match="reach"):
        TransitionModel.from_edges([("a", "b", 0.5), ("b", "c", 0.5)])  # a reaches c
    with pytest.raises(ParameterError, match="staying|reach"):
        TransitionModel.from_edges([("a", "b", 1.0), ("b", "a", 0.5)])  # a never stays
    with pytest.raises(ParameterError, match="for none"):
        TransitionModel.from_edges([("a", "b", 0.5), ("b", "a")])
    with pytest.raises(ParameterError, match=r"\(0, 1\]"):
        TransitionModel.from_edges([("a", "b", 0.0)])
    with pytest.raises(ParameterError, match="sum"):
        TransitionModel.from_edges([("a", "b", 0.7), ("a", "c", 0.7), ("b", "a", 0.5),
                                    ("b", "c", 0.2), ("c", "a", 0.3), ("c", "b", 0.3)])


def test_csv_and_dict_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "T.csv"
    path.write_text("from,to,probability\nflu,pneumonia,0.2\npneumonia,flu,0.1\n\n")
    model = read_transitions(path)
    assert model.cus("flu") == {"flu", "pneumonia"} and model.probabilistic
    again = TransitionModel.from_dict(model.to_dict())
    assert again.to_dict() == model.to_dict()
    assert again.probabilities(["flu", "pneumonia"]) == pytest.approx(
        model.probabilities(["flu", "pneumonia"]))
    plain = tmp_path / "plain.csv"
    plain.write_text("from,to\nflu,pneumonia\n")
    assert not read_transitions(plain).probabilistic
    bad = tmp_path / "bad.csv"
    bad.write_text("source,target\nflu,pneumonia\n")
    with pytest.raises(InputError, match="from,to"):
        read_transitions(bad)
    with pytest.raises(InputError, match="not found"):
        read_transitions(tmp_path / "missing.csv")
    graph = nx.DiGraph([("x", "y")])
    assert TransitionModel.from_graph(graph).cus("x") == {"x", "y"}
    assert TransitionModel.identity(["x", "y"]).is_identity()
    assert model.cus("unknown") == {"unknown"}


def test_block_transitions_have_the_diameter() -> None:
    names = [f"v{i}" for i in range(14)]
    model = block_transitions(names, 5)
    assert [len(model.cus(v)) for v in names] == [5] * 10 + [4] * 4
    assert model.probabilities(names)[0, :5] == pytest.approx([0.2] * 5)
    assert block_transitions(names, 1).is_identity()
    components = model.conflict_components(names)
    assert len(set(components.values())) == 3
