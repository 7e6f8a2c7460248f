"""The weights of the pair bound (republish.models.whole_release_pair_weights): every
separation pattern set bounds a group's extent by its pairs; the searched weights raise
the bound where the uniform weights lose (tests/test_whole_release_pair_bound.py checks
them against the uniform bound and the exhaustive optimum on random instances); and
looser polytopes (a mutation of the patterns) pass the optimum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.linear_solver import pywraplp
from test_whole_release_model import brute_force
from test_whole_release_row_bound import (
    SCHEMA,
    hierarchy_optimum,
)

import republish.models.whole_release_pair_weights as weights_module
from republish.models.whole_release import WholeReleaseProblem
from republish.models.whole_release_pair_bound import pair_bound
from republish.models.whole_release_pair_weights import LINE, separation_patterns
from republish.objectives import ReleaseCost


def _largest_share(patterns: np.ndarray, d_over_ext: np.ndarray) -> float:
    """``max Σ_p λ_p·d_p / ext`` over the polytope ``patterns·λ <= 1``, ``λ >= 0``."""
    solver = pywraplp.Solver.CreateSolver("GLOP")
    lam = [solver.NumVar(0.0, solver.infinity(), f"lambda_{p}") for p in range(len(d_over_ext))]
    for row in patterns:
        solver.Add(solver.Sum([float(c) * x for c, x in zip(row, lam, strict=True) if c]) <= 1.0)
    solver.Maximize(solver.Sum([float(c) * x for c, x in zip(d_over_ext, lam, strict=True)]))
    assert solver.Solve() == pywraplp.Solver.OPTIMAL
    return float(solver.Objective().Value())


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.lists(st.integers(0, 6), min_size=5, max_size=5))
def test_line_patterns_bound_every_group(s: int, coordinates: list[int]) -> None:
    """Points on a line: no weight vector of the polytope lets the pairs exceed the
    extent, and the bipartition the points realise is tight."""
    x = np.array(coordinates[:s], dtype=float)
    ext = np.ptp(x)
    if ext == 0:
        return
    d = np.array([abs(x[i] - x[j]) for i, j in itertools.combinations(range(s), 2)])
    share = _largest_share(separation_patterns(LINE, s), d / ext)
    assert share <= 1 + 1e-9
    if len(np.unique(x)) == 2:  # two clusters: exactly one bipartition, reached
        assert share == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.lists(st.integers(0, 4), min_size=5, max_size=5))
def test_chain_patterns_bound_every_group(s: int, leaves: list[int]) -> None:
    """Leaves of the test hierarchy (five leaves, two levels): ``d`` of a pair is the cost
    of its lowest common cell, the group's extent that of all; the chain's kind is its
    number of leaves, and a two-leaf chain (a binary QI) gets bipartitions."""
    cost = ReleaseCost.of(SCHEMA, np.column_stack([np.zeros(5), np.arange(5.0)]))
    rows = np.array(leaves[:s])
    ext = cost.extent(rows)
    if ext == 0:
        return
    d = np.array([cost.extent(rows[[i, j]]) for i, j in itertools.combinations(range(s), 2)])
    assert _largest_share(separation_patterns(5, s), d / ext) <= 1 + 1e-9
    binary = (rows >= 2).astype(float)  # two leaves: distance 1 across
    if binary.min() < binary.max():
        pairs = np.array([float(binary[i] != binary[j])
                          for i, j in itertools.combinations(range(s), 2)])
        assert _largest_share(separation_patterns(2, s), pairs) == pytest.approx(1.0)


def test_patterns_are_the_maximal_partitions() -> None:
    """Line: the 2^(s-1) - 1 bipartitions; a chain with at least s leaves: all pairs; a
    chain of 3 leaves and 4 slots: the 6 partitions into 3 blocks."""
    assert [len(separation_patterns(LINE, s)) for s in (2, 3, 4, 5)] == [1, 3, 7, 15]
    assert (separation_patterns(7, 4) == 1).all() and separation_patterns(7, 4).shape == (1, 6)
    three = separation_patterns(3, 4)
    assert three.shape == (6, 6) and (three.sum(axis=1) == 5).all()


def test_weights_raise_the_bound() -> None:
    """Three buckets of values {0, 1, 2} on a hierarchy: the uniform weights give a
    quarter of the optimum, the searched weights more than half."""
    codes = np.array([[0, 0], [3, 0], [0, 2], [3, 4], [1, 0], [2, 4], [0, 0], [0, 4]],
                     dtype=float)
    cost = ReleaseCost.of(SCHEMA, codes)
    sigma = frozenset({0, 1, 2})
    problem = WholeReleaseProblem(cost.points, np.array([2, 2, 0, 1, 0, 1, 0, 1]),
                                  np.array([0, 1, 2, 2, -1, -1, -1, -1]),
                                  (sigma, sigma, sigma), 3, 3)
    optimum = hierarchy_optimum(problem, cost)
    assert optimum is not None and optimum[1] == pytest.approx(14.0)
    extent = cost.model_extent(lambda rows: 0)
    uniform = pair_bound(problem, extent, optimum[0], weighted=False)
    searched = pair_bound(problem, extent, optimum[0])
    assert uniform.bound == pytest.approx(3.5, abs=1e-3)
    assert searched.rounds >= 1 and 7.9 <= searched.bound <= optimum[1]


@pytest.mark.parametrize("loose", ["line", "chain"])
def test_looser_polytopes_pass_the_optimum(loose: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Each pair alone at weight 1 (``λ_p <= 1`` only) on the line, or on a binary QI
    (a two-leaf chain), lets the bound pass the optimum: the patterns are needed."""
    if loose == "line":  # y on a line; x constant
        points = np.array([[1.0, 0.5], [1.0, 0.0], [1.0, 1.0]])
        problem = WholeReleaseProblem(points, np.array([0, 4, 1]), np.zeros(3, np.int64),
                                      (frozenset({0, 1, 4}),), 3, 5)
    else:  # y takes two values: a two-leaf chain
        points = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
        problem = WholeReleaseProblem(points, np.array([3, 1, 0]), np.array([0, 0, -1]),
                                      (frozenset({0, 1, 3}),), 3, 4)
    optimum = brute_force(problem)
    assert optimum is not None
    right = pair_bound(problem, None, optimum[0])
    assert right.bound <= optimum[1] + 1e-9
    original = weights_module.separation_patterns

    def each_pair_alone(kind: int, s: int) -> np.ndarray:
        if (kind == LINE) == (loose == "line"):
            return np.eye(s * (s - 1) // 2)
        return original(kind, s)

    monkeypatch.setattr(weights_module, "separation_patterns", each_pair_alone)
    wrong = pair_bound(problem, None, optimum[0])
    assert wrong.bound > optimum[1] + 1e-6
