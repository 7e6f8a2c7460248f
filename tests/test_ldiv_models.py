"""Exact l-diversity models against brute force on tiny tables; heuristics against them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from republish.errors import InputError, ParameterError
from republish.generalization import group_boxes, star_count
from republish.heuristics.mondrian import mondrian
from republish.heuristics.tp_plus import tp_plus
from republish.models.matching import solve_two_value_matching
from republish.models.star_minimization import solve_star_minimization
from republish.models.tuple_minimization import pair_counts, solve_tuple_minimization


def set_partitions(n: int):
    """Every partition of ``range(n)`` as a list of block labels (restricted growth strings)."""
    labels = [0] * n

    def extend(i: int, blocks: int):
        if i == n:
            yield list(labels)
            return
        for b in range(blocks + 1):
            labels[i] = b
            yield from extend(i + 1, max(blocks, b + 1))

    if n:
        yield from extend(1, 1)


def brute_force(codes: np.ndarray, sensitive: np.ndarray, l: int) -> tuple[int, int]:  # noqa: E741
    """(fewest stars, fewest suppressed tuples) over all l-diverse partitions."""
    best_stars = best_tuples = None
    for labels in set_partitions(len(sensitive)):
        groups = np.array(labels)
        if not all_eligible(groups, sensitive, l):
            continue
        boxes = group_boxes(codes, groups)
        stars = star_count(boxes)
        tuples = int(boxes.sizes[(boxes.high > boxes.low).any(axis=1)].sum())
        best_stars = stars if best_stars is None else min(best_stars, stars)
        best_tuples = tuples if best_tuples is None else min(best_tuples, tuples)
    assert best_stars is not None and best_tuples is not None
    return best_stars, best_tuples


def all_eligible(groups: np.ndarray, sensitive: np.ndarray, l: int) -> bool:  # noqa: E741
    for g in np.unique(groups):
        _, counts = np.unique(sensitive[groups == g], return_counts=True)
        if l * counts.max() > counts.sum():
            return False
    return True


@st.composite
def tiny_tables(draw, max_rows: int = 7):
    l = draw(st.integers(2, 3))  # noqa: E741
    n = draw(st.integers(l, max_rows))
    k = draw(st.integers(l, 4))
    assume(l * -(-n // k) <= n)  # k values round-robin: the largest fills ceil(n / k) rows
    d = draw(st.integers(1, 3))
    codes = np.array(draw(st.lists(st.lists(st.integers(0, 2), min_size=d, max_size=d),
                                   min_size=n, max_size=n)), dtype=float)
    sensitive = np.array(draw(st.permutations(list("abcd"[:k] * n)[:n])))
    return codes, sensitive, l


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_tables())
def test_models_equal_brute_force(table):
    codes, sensitive, l = table  # noqa: E741
    stars, tuples = brute_force(codes, sensitive, l)
    star_solution = solve_star_minimization(codes, sensitive, l, num_workers=1, time_limit=20)
    assert star_solution.status == "OPTIMAL"
    assert star_solution.objective == stars
    assert star_solution.groups is not None
    assert all_eligible(star_solution.groups, sensitive, l)
    assert star_count(group_boxes(codes, star_solution.groups)) == stars

    classes = np.unique(codes, axis=0, return_inverse=True)[1].ravel()
    values = np.unique(sensitive, return_inverse=True)[1]
    pair_group, pair_value, pair_count, _ = pair_counts(classes, values)
    tuple_solution = solve_tuple_minimization(pair_group, pair_value, pair_count, l,
                                              num_workers=1, time_limit=20)
    assert tuple_solution.status == "OPTIMAL"
    assert tuple_solution.objective == tuples

    plus = tp_plus(codes, sensitive, l)
    assert all_eligible(plus.groups, sensitive, l)
    assert star_count(group_boxes(codes, plus.groups)) >= stars
    assert plus.three_phase.suppressed_tuples >= tuples


def test_tuple_model_hint_and_bound():
    rng = np.random.default_rng(5)
    classes = rng.integers(0, 40, size=2000)
    values = rng.integers(0, 6, size=2000)
    pair_group, pair_value, pair_count, _ = pair_counts(classes, values)
    cold = solve_tuple_minimization(pair_group, pair_value, pair_count, 5, num_workers=1)
    hinted = solve_tuple_minimization(pair_group, pair_value, pair_count, 5, num_workers=1,
                                      hint_removed=pair_count)  # "remove all": feasible
    assert cold.status == hinted.status == "OPTIMAL"
    assert cold.objective == hinted.objective
    assert cold.bound == cold.objective and cold.gap == 0
    with pytest.raises(InputError):
        solve_tuple_minimization(np.array([0]), np.array([0]), np.array([3]), 2)
    with pytest.raises(ParameterError):
        solve_tuple_minimization(pair_group, pair_value, pair_count, 5, num_workers=0)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.integers(1, 3), st.randoms(use_true_random=False))
def test_matching_equals_star_model(half, d, random):
    rng = np.random.default_rng(random.randint(0, 2**32 - 1))
    codes = rng.integers(0, 3, size=(2 * half, d)).astype(float)
    sensitive = rng.permutation(np.array(["x"] * half + ["y"] * half))
    matching = solve_two_value_matching(codes, sensitive)
    exact = solve_star_minimization(codes, sensitive, 2, num_workers=1)
    assert matching.objective == exact.objective
    assert star_count(group_boxes(codes, matching.groups)) == matching.objective
    assert all_eligible(matching.groups, sensitive, 2)


def test_matching_large_table_and_errors():
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 4, size=(20000, 3)).astype(float)
    sensitive = np.array(["x", "y"] * 10000)
    solution = solve_two_value_matching(codes, sensitive)
    assert solution.status == "OPTIMAL"
    assert star_count(group_boxes(codes, solution.groups)) == solution.objective
    assert all_eligible(solution.groups, sensitive, 2)
    with pytest.raises(InputError, match="not 2-eligible"):
        solve_two_value_matching(codes[:3], sensitive[:3])
    with pytest.raises(ParameterError, match="exactly two SA values"):
        solve_two_value_matching(codes[:3], np.array(["a", "b", "c"]))


def test_mondrian_cuts_only_into_eligible_halves():
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 50, size=(3000, 3)).astype(float)
    sensitive = rng.choice(list("abcdefgh"), size=3000)
    result = mondrian(codes, sensitive, 4)
    assert result.n_groups > 50
    assert all_eligible(result.groups, sensitive, 4)
    assert np.unique(result.groups).tolist() == list(range(result.n_groups))
    # a table that cannot be cut stays one group
    single = mondrian(codes[:7], np.array(list("abcdefg")), 4)
    assert single.n_groups == 1
