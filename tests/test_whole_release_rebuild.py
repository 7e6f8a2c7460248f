"""Rebuilding buckets by sequential assignment (republish.models.whole_release_rebuild):
on random tiny releases the result is valid, keeps every group's signature, every bucket's
rows and the counterfeits, and never raises (b); on buckets of two values it is the
optimal matching (brute force)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from test_whole_release_model import tiny_problems

from republish.models.whole_release import WholeReleaseProblem
from republish.models.whole_release_counts import BoxExtent, optimal_counts, realize_counts
from republish.models.whole_release_problem import group_signature, release_problems
from republish.models.whole_release_rebuild import rebuild_buckets


def perimeter(problem: WholeReleaseProblem, groups: list[np.ndarray] | tuple[np.ndarray, ...]
              ) -> float:
    extent = BoxExtent(problem.points)
    return sum(len(group_signature(problem, g)) * extent(g) for g in groups)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_problems())
def test_rebuild_is_valid_and_never_worse(problem: WholeReleaseProblem) -> None:
    plan = optimal_counts(problem, time_limit=5.0)
    if plan.value is None:
        return
    groups, late = realize_counts(problem, plan)
    found = rebuild_buckets(problem, groups, deadline=math.inf)
    assert release_problems(problem, list(found.groups), late) == []
    assert len(found.groups) == len(groups)
    def counterfeits(release: list[np.ndarray] | tuple[np.ndarray, ...]) -> Counter[object]:
        # per signature: its groups, and the counterfeits of each value they hold
        found: Counter[object] = Counter(group_signature(problem, g) for g in release)
        for g in release:
            sigma = group_signature(problem, g)
            found.update((sigma, v) for v in sigma - set(problem.values[g].tolist()))
        return found

    assert counterfeits(groups) == counterfeits(found.groups)
    owner = {int(i): j for j, g in enumerate(groups) for i in g}
    for g in found.groups:  # every row stays among the groups of its bucket
        buckets = {int(problem.bucket[groups[owner[int(i)]]].max()) for i in g}
        assert len(buckets) == 1
    assert perimeter(problem, found.groups) <= perimeter(problem, groups) + 1e-9
    assert found.gain == pytest.approx(perimeter(problem, groups)
                                       - perimeter(problem, found.groups), abs=1e-9)


def test_two_value_bucket_is_rebuilt_to_the_optimal_matching() -> None:
    """Two values, one bucket: the rebuild is one exact assignment, the best grouping."""
    rng = np.random.default_rng(5)
    improved = 0
    for _ in range(30):
        points = rng.integers(0, 10, (10, 2)) / 10
        values = np.array([0, 1] * 5)
        problem = WholeReleaseProblem(points, values, np.zeros(10, np.int64),
                                      (frozenset({0, 1}),), 2, 2)
        start = [np.array([0, 3]), np.array([2, 5]), np.array([4, 7]), np.array([6, 9]),
                 np.array([8, 1])]
        best = min(sum(2 * BoxExtent(points)(np.array([2 * i, 2 * p + 1]))
                       for i, p in enumerate(perm))
                   for perm in itertools.permutations(range(5)))
        found = rebuild_buckets(problem, start, deadline=math.inf)
        assert perimeter(problem, found.groups) == pytest.approx(best, abs=1e-5)
        improved += found.rebuilt
    assert improved > 0  # the start was not already optimal every time
