"""The SUG attack (Li & Zhou §III): Example 4, Lemma 2, bulk vs networkx, identity case."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.audit.intersection import intersection_attack
from republish.audit.knowledge import knowledge_from_releases
from republish.audit.sug import (
    _attack,
    build_sug,
    disclosure_risks,
    feasible_paths,
    feasible_sub_sug,
    node_shares,
    sug_attack,
    sug_attack_groups,
)
from republish.errors import ParameterError
from republish.release import build_release
from republish.schema import make_schema
from republish.tables import validate_table
from republish.transitions import TransitionModel

# Fig. 2(a), reconstructed from Example 4: pruning leaves V'1 = {a1, a2, a3},
# V'2 = {b3, b4}, V'3 = {c2, c3, c4} (Fig. 2(b)); a4 -> b1 and a1 -> b2 lead nowhere,
# c1 has no predecessor.
FIG2_EDGES = [("a1", "b3"), ("a2", "b3"), ("a3", "b3"), ("a2", "b4"), ("b3", "c2"),
              ("b4", "c3"), ("b4", "c4"), ("a1", "b2"), ("a4", "b1")]
FIG2_LAYERS = [["a1", "a2", "a3", "a4"], ["b1", "b2", "b3", "b4"], ["c1", "c2", "c3", "c4"]]


def fraction(x: float) -> Fraction:
    return Fraction(x).limit_denominator(1000)


def test_example_4_paths_and_risks() -> None:
    model = TransitionModel.from_edges(FIG2_EDGES)
    sub = feasible_sub_sug(build_sug(FIG2_LAYERS, model))
    assert sorted(sub.nodes) == [(0, "a1"), (0, "a2"), (0, "a3"), (1, "b3"), (1, "b4"),
                                 (2, "c2"), (2, "c3"), (2, "c4")]
    paths = feasible_paths(sub)
    weights = [fraction(w) for _, w in paths]
    assert weights == [Fraction(1, 18), Fraction(1, 36), Fraction(1, 72), Fraction(1, 72),
                       Fraction(1, 18)]
    assert sum(weights) == Fraction(1, 6)
    through_v12 = [p for p, _ in paths if p[0] == (0, "a2")]
    assert through_v12 == [((0, "a2"), (1, "b3"), (2, "c2")), ((0, "a2"), (1, "b4"), (2, "c3")),
                           ((0, "a2"), (1, "b4"), (2, "c4"))]
    risks = [fraction(r) for r in disclosure_risks(sub, ["a2", "b4", "c3"])]
    assert risks == [Fraction(1, 3), Fraction(1, 6), Fraction(1, 12)]


def test_julia_example_3_and_probabilities() -> None:
    model = TransitionModel.from_edges(
        [("Pneumonia", "Lung Cancer", 0.25), ("Pneumonia", "Flu", 0.25),
         ("Flu", "Pneumonia", 0.5), ("Flu", "Lung Cancer", 0.25),
         ("Lung Cancer", "Pneumonia", 0.1), ("Lung Cancer", "Flu", 0.1),
         ("Dyspepsia", "Gastritis", 0.5), ("Gastritis", "Dyspepsia", 0.5)])
    sub = feasible_sub_sug(build_sug([["Dyspepsia", "Pneumonia"], ["Lung Cancer", "Pneumonia"]],
                                     model))
    assert disclosure_risks(sub, ["Pneumonia", "Lung Cancer"]) == pytest.approx((1.0, 0.5))
    # P(stay) = 0.5, P(-> lung cancer) = 0.25: given pneumonia, 2:1 for staying.
    risks = disclosure_risks(sub, ["Pneumonia", "Lung Cancer"], "probabilities")
    assert risks == pytest.approx((1.0, 1 / 3))


def test_weighting_is_validated() -> None:
    schema = make_schema("id", "sa", ["x"])
    table = validate_table(pd.DataFrame({"id": ["1", "2"], "x": [1, 2], "sa": ["a", "b"]}),
                           schema)
    releases = [build_release(1, table, [1, 1], schema, rng=np.random.default_rng(0))]
    model = TransitionModel.from_edges([("a", "b")])
    with pytest.raises(ParameterError, match="probabilities"):
        sug_attack_groups(releases, model, "probabilities")
    with pytest.raises(ParameterError, match="weighting"):
        sug_attack_groups(releases, model, "uniform")  # type: ignore[arg-type]


values = st.sampled_from(["a", "b", "c", "d", "e"])
relations = st.lists(st.tuples(values, values), max_size=8)
layers = st.lists(st.lists(values, min_size=1, max_size=4, unique=True), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(relations, layers, st.data())
def test_bulk_attack_matches_the_networkx_graph_and_lemma_2(
    edges: list[tuple[str, str]], candidate_sets: list[list[str]], data: st.DataObject
) -> None:
    model = TransitionModel.from_edges([e for e in dict.fromkeys(edges) if e[0] != e[1]],
                                       ["a", "b", "c", "d", "e"])
    truth = [data.draw(st.sampled_from(layer)) for layer in candidate_sets]
    sub = feasible_sub_sug(build_sug(candidate_sets, model))
    expected = disclosure_risks(sub, truth)
    domain = ("a", "b", "c", "d", "e")
    masks = np.array([[v in layer for v in domain] for layer in candidate_sets])
    bulk = _attack(domain, np.array(["t"] * len(candidate_sets), dtype=object),
                   np.arange(1, len(candidate_sets) + 1), masks,
                   np.array([domain.index(v) for v in truth]), model, "random-world")
    sizes = [sum(1 for n in sub.nodes if n[0] == i) for i in range(len(candidate_sets))]
    assert bulk.feasible_sizes.tolist() == sizes
    if min(sizes) > 0:
        assert np.allclose(bulk.risk, expected)
        paths = feasible_paths(sub)
        total = sum(w for _, w in paths)
        shares = node_shares(sub)
        for i, v in enumerate(truth):
            through = sum(w for p, w in paths if p[i] == (i, v))
            assert through / total == pytest.approx(shares.get((i, v), 0.0))
            # Lemma 2: a feasible true value has risk 1 exactly when it is alone.
            if (i, v) in sub:
                assert (expected[i] == pytest.approx(1.0)) == (sizes[i] == 1)
    else:
        assert not sub.nodes or min(sizes) == 0


def test_identity_transitions_reduce_to_the_intersection_attack() -> None:
    schema = make_schema("id", "sa", ["x"])
    rng = np.random.default_rng(5)
    rows = 40
    base = validate_table(pd.DataFrame({
        "id": [str(i) for i in range(rows)], "x": rng.integers(0, 50, rows),
        "sa": rng.choice(list("abcdef"), rows)}), schema)
    releases = []
    for number in (1, 2, 3):
        present = base.iloc[np.sort(rng.choice(rows, 30, replace=False))].reset_index(drop=True)
        groups = rng.integers(0, 8, len(present))
        releases.append(build_release(number, present, groups, schema, rng=rng))
    knowledge = knowledge_from_releases(releases)
    model = TransitionModel.identity(list("abcdef"))
    sug = sug_attack(releases, knowledge, model)
    intersection = intersection_attack(releases, knowledge)
    smallest = dict(zip(*np.unique(sug.identifiers, return_index=True), strict=True))
    by_id = {str(i): int(s) for i, s in zip(intersection.identifiers, intersection.sizes,
                                             strict=True)}
    for ident in smallest:
        mine = sug.feasible_sizes[sug.identifiers == ident]
        assert (mine == by_id[str(ident)]).all()
    assert sorted(sug.vulnerable_ids) == sorted(intersection.vulnerable_ids)
