"""Groups of new rows only regrouped freely inside a release step with old rows
(models/whole_release_polish.py, regroup_new_groups; used by the large-release search of
models/whole_release_large.py): the release stays valid, (a) and the groups holding old
rows stay as they are, and (b) falls where the start grouped new rows badly."""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_whole_release_slots import random_release

import republish.models.whole_release as whole_release
import republish.models.whole_release_large as whole_release_large
from republish.models.whole_release import solve_whole_release
from republish.models.whole_release_answer import release_objectives
from republish.models.whole_release_counts import BoxExtent
from republish.models.whole_release_polish import regroup_new_groups
from republish.models.whole_release_problem import WholeReleaseProblem, release_problems

NO_DEFERRED = np.zeros(0, np.int64)


def with_new_groups(seed: int, m: int) -> tuple[WholeReleaseProblem, list[np.ndarray]]:
    """random_release plus 2-5 more groups of new rows of m distinct values."""
    problem, groups = random_release(seed, m)
    rng = np.random.default_rng(seed + 1)
    values, bucket = problem.values.tolist(), problem.bucket.tolist()
    extra = []
    for _ in range(int(rng.integers(2, 6))):
        chosen = rng.choice(problem.domain_size, size=m, replace=False).tolist()
        extra.append(np.arange(len(values), len(values) + m))
        values += chosen
        bucket += [-1] * m
    points = np.vstack([problem.points, rng.random((len(values) - len(problem.values), 2))])
    grown = WholeReleaseProblem(points, np.array(values), np.array(bucket), problem.signatures,
                                m, problem.domain_size,
                                counterfeits_in_new_groups=problem.counterfeits_in_new_groups)
    return grown, groups + extra


def objectives(problem: WholeReleaseProblem, groups: list[np.ndarray]) -> tuple[float, float]:
    a, b = release_objectives(problem, groups, 0, Fraction(1), BoxExtent(problem.points))
    return float(a), b


def only_new(problem: WholeReleaseProblem, group: np.ndarray) -> bool:
    return bool((problem.bucket[group] < 0).all()) and len(group) >= problem.m and \
        len(np.unique(problem.values[group])) == len(group)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3))
def test_regrouping_keeps_the_release_valid_and_the_other_groups(seed: int, m: int) -> None:
    problem, groups = with_new_groups(seed, m)
    assert release_problems(problem, groups, NO_DEFERRED) == []
    found = regroup_new_groups(problem, groups, BoxExtent(problem.points),
                               deadline=time.perf_counter() + 0.3, seed=seed)
    if found is None:
        return
    assert release_problems(problem, found, NO_DEFERRED) == []
    key = sorted(tuple(sorted(g.tolist())) for g in groups if not only_new(problem, g))
    assert sorted(tuple(sorted(g.tolist())) for g in found if not only_new(problem, g)) == key
    before_rows = np.sort(np.concatenate([g for g in groups if only_new(problem, g)]))
    after_rows = np.sort(np.concatenate([g for g in found if only_new(problem, g)]))
    assert np.array_equal(before_rows, after_rows)
    (a_before, b_before), (a_after, b_after) = objectives(problem, groups), \
        objectives(problem, found)
    assert a_after == a_before
    assert b_after < b_before


def crosswise(m: int = 3, per_cluster: int = 4) -> tuple[WholeReleaseProblem,
                                                         list[np.ndarray]]:
    """One bucket of old rows, and new rows in two far clusters (each holding every value
    ``per_cluster`` times) grouped across the clusters: every start group spans the square,
    while groups inside each cluster cost almost nothing."""
    rng = np.random.default_rng(0)
    points, values, bucket, groups = [], [], [], []
    for v in range(m):  # the bucket: one group of old rows
        points.append([0.5, 0.5])
        values.append(v)
        bucket.append(0)
    groups.append(np.arange(m))
    clusters = {0: [], 1: []}
    for cluster, centre in ((0, 0.0), (1, 1.0)):
        for _ in range(per_cluster):
            for v in range(m):
                points.append(list(centre + 0.01 * rng.random(2)))
                values.append(v)
                bucket.append(-1)
                clusters[cluster].append(len(values) - 1)
    left, right = np.array(clusters[0]), np.array(clusters[1])
    for k in range(per_cluster):  # rows of value 0 from one cluster, the rest the other
        a, b = left[k * m:(k + 1) * m], right[k * m:(k + 1) * m]
        groups.append(np.array([a[0], b[1], b[2]]))
        groups.append(np.array([b[0], a[1], a[2]]))
    problem = WholeReleaseProblem(np.array(points), np.array(values), np.array(bucket),
                                  (frozenset(range(m)),), m, m)
    return problem, groups


def test_crosswise_groups_are_regrouped_inside_their_clusters() -> None:
    problem, groups = crosswise()
    assert release_problems(problem, groups, NO_DEFERRED) == []
    found = regroup_new_groups(problem, groups, BoxExtent(problem.points),
                               deadline=time.perf_counter() + 2.0, seed=0)
    assert found is not None
    assert release_problems(problem, found, NO_DEFERRED) == []
    _, before = objectives(problem, groups)
    _, after = objectives(problem, found)
    assert before > 8 * 3 * 2 * 0.9  # 8 groups of 3 slots spanning about 1 on each QI
    assert after < 8 * 3 * 2 * 0.02  # inside the clusters: at most 0.02 per group and slot


def across_signatures(per_cluster: int = 3) -> tuple[WholeReleaseProblem,
                                                     list[np.ndarray]]:
    """m = 3, a bucket of old rows, and new rows of values 0, 1, 2 near (0, 0) and 3, 4, 5
    near (1, 1), grouped as {0, 3, 4} and {1, 2, 5}: the two signatures share no value, so
    no slot trade or search within signatures helps; the cheap groups have new signatures
    {0, 1, 2} and {3, 4, 5}."""
    rng = np.random.default_rng(1)
    points = [[0.5, 0.5]] * 3
    values, bucket = [0, 1, 2], [0, 0, 0]
    groups = [np.arange(3)]
    for _ in range(per_cluster):
        at = {}
        for v in range(6):
            points.append(list((0.0 if v < 3 else 1.0) + 0.01 * rng.random(2)))
            values.append(v)
            bucket.append(-1)
            at[v] = len(values) - 1
        groups += [np.array([at[0], at[3], at[4]]), np.array([at[1], at[2], at[5]])]
    problem = WholeReleaseProblem(np.array(points), np.array(values), np.array(bucket),
                                  (frozenset({0, 1, 2}),), 3, 6)
    return problem, groups


def test_the_large_release_search_regroups_new_groups(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    problem, groups = across_signatures()
    assert release_problems(problem, groups, NO_DEFERRED) == []
    _, before = objectives(problem, groups)
    assert before > 6 * 3 * 2 * 0.9
    monkeypatch.setattr(whole_release, "WHOLE_MODEL_ROWS", 10)
    answer = solve_whole_release(problem, time_limit=2.0, hint=(groups, []))
    assert "groups of new rows regrouped" in answer.detail
    assert release_problems(problem, list(answer.groups), answer.deferred) == []
    assert answer.objective_a == 0
    assert answer.objective_b < 6 * 3 * 2 * 0.02
    signatures = {frozenset(problem.values[g].tolist()) for g in answer.groups
                  if (problem.bucket[g] < 0).all()}
    assert signatures <= {frozenset({0, 1, 2}), frozenset({3, 4, 5})}


def test_nothing_to_regroup() -> None:
    """Fewer than two groups of new rows only: None, the caller keeps its groups. A group
    with fewer rows than m holds counterfeits and is not one of them."""
    problem, groups = crosswise()
    short = groups[2][:2]  # two new rows: the group's third slot is a counterfeit
    assert regroup_new_groups(problem, [groups[0], groups[1], short],
                              BoxExtent(problem.points), deadline=time.perf_counter() + 1.0,
                              seed=0) is None


def test_no_regrouping_where_values_are_scarce(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same release with the slack required above its own (1 - 3·4/21 = 0.43): the
    groups of new rows keep their signatures, which no other step can change, so the
    release stays dear (at m = 7 on Adult, regrouped signatures cost later releases
    counterfeits)."""
    problem, groups = across_signatures()
    assert whole_release_large._regroups_new_groups(problem, Fraction(0))
    assert not whole_release_large._regroups_new_groups(problem, Fraction(1))  # A* > 0
    first = WholeReleaseProblem(problem.points, problem.values, np.full(len(problem.values),
                                                                          -1), (), 3, 6)
    assert not whole_release_large._regroups_new_groups(first, Fraction(0))
    monkeypatch.setattr(whole_release_large, "NEW_GROUPS_MIN_SLACK", 0.5)
    monkeypatch.setattr(whole_release, "WHOLE_MODEL_ROWS", 10)
    answer = solve_whole_release(problem, time_limit=1.0, hint=(groups, []))
    assert "regrouped" not in answer.detail
    assert answer.objective_b > 6 * 3 * 2 * 0.9
