"""A first release from the m-row relaxation's groups
(republish.models.whole_release_relaxation_ladder): a valid partition into m-unique groups,
cheaper than the incumbent it started from and never below the exhaustive optimum, or None
where its inputs do not hold."""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_whole_release_model import brute_force
from test_whole_release_subset_bound import first_release

from republish.heuristics.compact_groups import compact_groups
from republish.models.whole_release_counts import BoxExtent
from republish.models.whole_release_extent_tables import tabulated
from republish.models.whole_release_problem import release_problems
from republish.models.whole_release_relaxation_ladder import ladder_from_relaxation
from republish.models.whole_release_subset_bound import subset_bound


def cost(groups: list[np.ndarray], measure: BoxExtent) -> float:
    return sum(len(g) * measure(g) for g in groups)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_the_ladder_returns_a_cheaper_valid_partition(seed: int) -> None:
    """Deferrals allowed or not (a third of the seeds), every row is grouped."""
    problem = first_release(seed, n=9)
    optimum = brute_force(problem)
    start = compact_groups(problem.points, problem.values, problem.m, passes=1)
    if optimum is None or optimum[0] != 0 or start is None:
        return  # counterfeits needed, or no start without them
    measure = tabulated(BoxExtent(problem.points))
    relaxation = subset_bound(problem, measure, start, deadline=time.perf_counter() + 10)
    assert relaxation.converged and len(relaxation.duals) == len(problem.values)
    found = ladder_from_relaxation(problem, measure, relaxation, start,
                                   deadline=time.perf_counter() + 10, seed=0)
    if found is None:  # nothing cheaper in its pools: the start may be optimal already
        assert cost(start, measure) >= optimum[1] - 1e-9
        return
    assert not release_problems(problem, found, np.zeros(0, dtype=np.int64))
    assert optimum[1] - 1e-9 <= cost(found, measure) < cost(start, measure)
    assert relaxation.bound <= cost(found, measure) + 1e-9


@pytest.mark.parametrize("seed", [0, 12, 15, 18, 24, 27, 33, 36])  # (a) = 0 on these
def test_the_ladder_improves_a_poor_start(seed: int) -> None:
    """From groups formed by value order alone (the points ignored) the ladder finds a
    cheaper partition wherever the start is not optimal."""
    problem = dataclasses.replace(first_release(seed, n=9), allow_deferrals=False)
    optimum = brute_force(problem)
    start = compact_groups(np.zeros_like(problem.points), problem.values, problem.m,
                           passes=1)
    assert optimum is not None and optimum[0] == 0 and start is not None
    measure = tabulated(BoxExtent(problem.points))
    relaxation = subset_bound(problem, measure, start, deadline=time.perf_counter() + 10)
    found = ladder_from_relaxation(problem, measure, relaxation, start,
                                   deadline=time.perf_counter() + 10, seed=0)
    if cost(start, measure) > optimum[1] + 1e-9:
        assert found is not None
        assert optimum[1] - 1e-9 <= cost(found, measure) < cost(start, measure)


@pytest.mark.parametrize("broken", ["size", "duals", "measure"])
def test_the_ladder_needs_m_row_groups_duals_and_pair_extents(broken: str) -> None:
    problem = dataclasses.replace(first_release(5, n=9), allow_deferrals=False)
    measure = tabulated(BoxExtent(problem.points))
    start = compact_groups(problem.points, problem.values, problem.m, passes=1)
    assert start is not None
    relaxation = subset_bound(problem, measure, start, deadline=time.perf_counter() + 10)
    assert math.isfinite(relaxation.bound)
    if broken == "size":
        relaxation = dataclasses.replace(relaxation, size=problem.m - 1)
    elif broken == "duals":
        relaxation = dataclasses.replace(relaxation, duals=np.zeros(0))
    used = measure.__call__ if broken == "measure" else measure
    assert ladder_from_relaxation(problem, used, relaxation, start,  # type: ignore[arg-type]
                                  deadline=time.perf_counter() + 10, seed=0) is None
