"""The per-row and capacity bound on objective (b) (republish.models.whole_release_row_bound)
against the exhaustive optimum of tests/test_whole_release_model.py: never above the least
(b) of the releases whose (a) is optimal, for the box extent and a hierarchy extent."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
import test_whole_release_model as reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_whole_release_model import brute_force, tiny_problems

from republish.models.whole_release import WholeReleaseProblem
from republish.models.whole_release_counts import BoxExtent
from republish.models.whole_release_row_bound import _window, row_bound
from republish.objectives import ReleaseCost
from republish.schema import Hierarchy, QIAttribute, Schema

HIERARCHY = Hierarchy.from_rows([["a", "ab", "*"], ["b", "ab", "*"], ["c", "cd", "*"],
                                 ["d", "cd", "*"], ["e", "e", "*"]])
SCHEMA = Schema("id", "sa", (QIAttribute("x", "numeric"),
                             QIAttribute("h", "hierarchy", hierarchy=HIERARCHY)))


@st.composite
def coarse_problems(draw: st.DrawFn) -> WholeReleaseProblem:
    """The reference's tiny problems on a coarse grid (many rows share a point: the
    capacity part of the bound is exercised)."""
    problem = draw(tiny_problems())
    steps = draw(st.sampled_from([1, 2, 3, 10]))
    return dataclasses.replace(problem, points=np.round(problem.points * steps) / steps)


def a_star(optimum: tuple[Fraction, float]) -> Fraction:
    return optimum[0]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(coarse_problems())
def test_bound_never_exceeds_the_optimum_box(problem: WholeReleaseProblem) -> None:
    optimum = brute_force(problem)
    if optimum is None:
        return
    found = row_bound(problem, None, a_star(optimum))
    assert found.bound <= optimum[1] + 1e-9
    assert found.method == "separable"
    assert (found.relaxed <= found.full + 1e-12).all()
    # the same through an explicit BoxExtent and through a non-separable callable
    assert row_bound(problem, BoxExtent(problem.points), optimum[0]).bound == \
        pytest.approx(found.bound)
    plain = row_bound(problem, lambda rows: reference.box(problem.points, list(rows)),
                      optimum[0])
    assert plain.method == "pairwise" and plain.bound <= optimum[1] + 1e-9


@st.composite
def hierarchy_problems(draw: st.DrawFn) -> tuple[WholeReleaseProblem, ReleaseCost]:
    problem = draw(tiny_problems())
    n = len(problem.values)
    codes = np.column_stack([np.array(draw(st.lists(st.integers(0, 3), min_size=n,
                                                    max_size=n)), dtype=float),
                             np.array(draw(st.lists(st.integers(0, 4), min_size=n,
                                                    max_size=n)), dtype=float)])
    cost = ReleaseCost.of(SCHEMA, codes)
    return dataclasses.replace(problem, points=cost.points), cost


def hierarchy_optimum(problem: WholeReleaseProblem, cost: ReleaseCost
                      ) -> tuple[Fraction, float] | None:
    """The exhaustive optimum with ``cost``'s extent in place of the reference's box."""
    original = reference.box
    reference.box = lambda points, rows: cost.extent(np.asarray(rows, dtype=np.int64))
    try:
        return brute_force(problem)
    finally:
        reference.box = original


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchy_problems())
def test_bound_never_exceeds_the_optimum_hierarchy(
        case: tuple[WholeReleaseProblem, ReleaseCost]) -> None:
    problem, cost = case
    extent = cost.model_extent(lambda rows: 0)
    optimum = hierarchy_optimum(problem, cost)
    if optimum is None:
        return
    found = row_bound(problem, extent, optimum[0])
    assert found.method == "separable"
    assert found.bound <= optimum[1] + 1e-9


def test_window_matches_enumeration() -> None:
    """``min a + b`` with ``>= t`` columns covered, against all subsets."""
    rng = np.random.default_rng(0)
    left = np.where(rng.random((200, 5)) < 0.2, np.inf, rng.integers(0, 4, (200, 5)) / 4)
    right = np.where(rng.random((200, 5)) < 0.2, np.inf, rng.integers(0, 4, (200, 5)) / 4)
    t = rng.integers(0, 6, 200)
    got = _window(left, right, t)
    for i in range(200):
        options = [a + b for a in [0.0, *left[i]] for b in [0.0, *right[i]]
                   if ((left[i] <= a) | (right[i] <= b)).sum() >= t[i]]
        assert got[i] == (min(options) if options else np.inf)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.integers(0, 2**31 - 1))
def test_window_matches_enumeration_with_ties_and_wide_rows(v: int, seed: int) -> None:
    """The suffix-kept smallest rights against all ``(a, b)`` pairs: up to nine columns,
    repeated values, unreachable columns, ``t`` from 0 to past the column count."""
    rng = np.random.default_rng(seed)
    shape = (40, v)
    left = np.where(rng.random(shape) < 0.25, np.inf, rng.integers(0, 3, shape) / 2)
    right = np.where(rng.random(shape) < 0.25, np.inf, rng.integers(0, 3, shape) / 2)
    t = rng.integers(0, v + 2, 40)
    got = _window(left, right, t)
    for i in range(40):
        options = [a + b for a in [0.0, *left[i]] for b in [0.0, *right[i]]
                   if ((left[i] <= a) | (right[i] <= b)).sum() >= t[i]]
        assert got[i] == (min(options) if options else np.inf)


def test_dense_first_release_counts_capacity() -> None:
    """Two points, six rows of one value and one of the other at each, m = 2: one group
    of extent 0 at each point, the ten other rows pay the distance between the points."""
    points = np.array([[0.0, 0.0]] * 7 + [[0.5, 0.0]] * 7)
    values = np.array([0] * 6 + [1] + [0] + [1] * 6)
    problem = WholeReleaseProblem(points, values, np.full(14, -1), (), 2, 2)
    optimum = brute_force(problem)
    assert optimum is not None and optimum[0] == 0
    found = row_bound(problem, None, optimum[0])
    assert found.by_rows == 0.0  # every row alone has a partner at its point
    assert found.by_capacity == pytest.approx(optimum[1]) == 5.0


def test_a_bound_without_the_counterfeit_budget_fails() -> None:
    """A deliberately wrong bound -- groups always full, as if counterfeits were never
    affordable -- exceeds the optimum on some instance: the check can fail."""
    points = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.1, 0.0]])
    problem = WholeReleaseProblem(points, np.array([0, 1, 2, 0]), np.array([0, 0, 0, -1]),
                                  (frozenset({0, 1, 2}),), 2, 3)
    optimum = brute_force(problem)
    assert optimum is not None and optimum[0] > 0
    right = row_bound(problem, None, optimum[0])
    wrong = row_bound(problem, None, 0)  # no budget: the full groups of a release of (a)=0
    assert right.bound <= optimum[1] + 1e-9 < wrong.bound


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchy_problems(), st.integers(0, 60))
def test_a_bound_cut_short_within_a_cell_stays_below_the_full_one(
        case: tuple[WholeReleaseProblem, ReleaseCost], ticks: int) -> None:
    """The clock runs out after ``ticks`` readings, anywhere in the cells' loops (between
    two values of one cell included): each query's least extent is then never above the
    one computed with all the time, and the bound never above the optimum."""
    import math

    import republish.models.whole_release_row_bound as module
    from republish.models.whole_release_counts import ReleaseCounts

    problem, cost = case
    extent = cost.model_extent(lambda rows: 0)
    optimum = hierarchy_optimum(problem, cost)
    if optimum is None:
        return
    separable = module._separable(problem, extent)
    assert separable is not None
    numeric, chains = separable
    queries = module._queries(problem, ReleaseCounts.of(problem),
                              np.arange(len(problem.values)), math.floor(optimum[0]))
    x = numeric[0] if numeric else np.zeros(len(problem.values))
    whole = module._cell_minimum(problem, queries, chains, x, math.inf)
    readings = iter(range(10**6))

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return float(next(readings))

        process_time = staticmethod(module.time.process_time)

    original = module.time
    module.time = Clock  # type: ignore[assignment]
    try:
        cut = module._cell_minimum(problem, queries, chains, x, float(ticks))
        readings = iter(range(10**6))
        bound = row_bound(problem, extent, optimum[0], deadline=float(ticks)).bound
    finally:
        module.time = original
    for part_cut, part_whole in zip(cut, whole, strict=True):
        assert (part_cut <= part_whole + 1e-9).all()
    assert bound <= optimum[1] + 1e-9


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 12), st.booleans())
def test_distinct_rows_match_numpy_unique_of_rows(seed: int, columns: int,
                                                   coarse: bool) -> None:
    """One integer key per row where the columns' ranks fit, whole rows sorted where not
    (64 rows of 11-12 continuous columns: a key of 64^11 > 2^62): the same first indices
    and the same distinct row of each row as ``np.unique(axis=0)``."""
    from republish.models.whole_release_capacity import distinct_rows

    rng = np.random.default_rng(seed)
    coords = rng.integers(0, 3, (64, columns)) / 2.0 if coarse else rng.random((64, columns))
    _, first, inverse = np.unique(coords, axis=0, return_index=True, return_inverse=True)
    got_first, got_inverse = distinct_rows(coords)
    assert (got_first == first).all()
    assert (got_inverse == inverse.ravel()).all()
