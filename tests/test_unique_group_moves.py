"""Relocate and swap moves between m-unique groups (models/unique_group_moves.py) and
their use as the start of a release without old rows (models/whole_release_polish.py)."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.errors import ParameterError
from republish.heuristics.compact_groups import compact_groups
from republish.models.unique_group_moves import NEAREST_ROWS, improve_unique_groups
from republish.models.whole_release import WholeReleaseProblem, release_problems
from republish.models.whole_release_counts import BoxExtent
from republish.models.whole_release_polish import regroup_new_release


def total(points: np.ndarray, groups) -> float:  # type: ignore[no-untyped-def]
    return float(sum(len(g) * np.ptp(points[g], axis=0).sum() for g in groups))


def unique(values: np.ndarray, groups, m: int) -> bool:  # type: ignore[no-untyped-def]
    return all(len(g) >= m and len(set(values[g].tolist())) == len(g) for g in groups)


def random_start(seed: int, m: int, n: int) -> tuple[np.ndarray, np.ndarray, list] | None:
    rng = np.random.default_rng(seed)
    points = rng.integers(0, 6, size=(n, 2)).astype(float)
    values = rng.integers(0, m + 2, size=n)
    groups = compact_groups(points, values, m)
    return None if groups is None else (points, values, list(groups))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3), n=st.integers(4, 40),
       kicks=st.integers(0, 5))
def test_search_keeps_an_m_unique_partition_and_never_costs_more(seed: int, m: int, n: int,
                                                                 kicks: int) -> None:
    start = random_start(seed, m, n)
    if start is None:
        return
    points, values, groups = start
    found = improve_unique_groups(points, values, groups, m, seed=seed, max_kicks=kicks)
    assert sorted(np.concatenate(found.groups).tolist()) == \
        sorted(np.concatenate(groups).tolist())
    assert unique(values, found.groups, m)
    assert all(len(g) <= max(2 * m - 1, max(map(len, groups))) for g in found.groups)
    assert found.cost_before == pytest.approx(total(points, groups))
    assert found.cost_after == pytest.approx(total(points, found.groups))
    assert found.cost_after <= found.cost_before + 1e-9


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3), n=st.integers(4, NEAREST_ROWS + 1))
def test_a_finished_descent_leaves_no_improving_move(seed: int, m: int, n: int) -> None:
    """Every row's candidates are all groups when n <= NEAREST_ROWS + 1: after a
    descent that ended by itself, no relocation or swap of any two rows lowers the cost
    (checked by brute force, which would catch a wrong vectorized gain)."""
    start = random_start(seed, m, n)
    if start is None:
        return
    points, values, groups = start
    found = improve_unique_groups(points, values, groups, m, seed=seed)
    assert found.local_optimum
    final = [list(g) for g in found.groups]
    now = total(points, final)
    hi = max(2 * m - 1, max(map(len, groups)))
    for a, b in itertools.permutations(range(len(final)), 2):
        for x in final[a]:
            options = [(final[a][:], final[b][:])]
            moved = ([r for r in final[a] if r != x], final[b] + [x])
            if len(moved[0]) >= m and len(moved[1]) <= hi:
                options.append(moved)
            for y in final[b]:
                options.append(([r for r in final[a] if r != x] + [y],
                                [r for r in final[b] if r != y] + [x]))
            for new_a, new_b in options[1:]:
                if not unique(values, [np.array(new_a), np.array(new_b)], m):
                    continue
                rest = [g for k, g in enumerate(final) if k not in (a, b)]
                assert total(points, [*rest, new_a, new_b]) >= now - 1e-9


def test_a_swap_and_a_relocation_reach_the_optimum() -> None:
    """Two far clusters, rows crossed between the groups: one swap puts each pair in its
    cluster (cost 2·0.1 + 2·0.1); a row of a third value then moves to the group where it
    sits (m = 2, groups of up to 3 rows)."""
    points = np.array([[0.0], [0.1], [10.0], [10.1]])
    values = np.array([0, 1, 0, 1])
    found = improve_unique_groups(points, values, [np.array([0, 3]), np.array([1, 2])], 2)
    assert sorted(map(sorted, (g.tolist() for g in found.groups))) == [[0, 1], [2, 3]]
    assert found.cost_after == pytest.approx(0.4)
    points = np.array([[0.0], [0.1], [10.0], [10.1], [10.2]])
    values = np.array([0, 1, 2, 0, 1])
    found = improve_unique_groups(points, values, [np.array([0, 1, 2]), np.array([3, 4])], 2)
    assert sorted(map(sorted, (g.tolist() for g in found.groups))) == [[0, 1], [2, 3, 4]]
    assert found.cost_after == pytest.approx(2 * 0.1 + 3 * 0.2)


def test_kicks_never_return_a_worse_partition_than_the_descent() -> None:
    start = random_start(11, 3, 60)
    assert start is not None
    points, values, groups = start
    descent = improve_unique_groups(points, values, groups, 3, seed=4)
    iterated = improve_unique_groups(points, values, groups, 3, seed=4, max_kicks=30)
    assert iterated.kicks == 30
    assert iterated.cost_after <= descent.cost_after + 1e-9


def test_bad_groups_and_parameters_are_named() -> None:
    points, values = np.zeros((4, 1)), np.array([0, 0, 1, 1])
    with pytest.raises(ParameterError, match="group 0"):
        improve_unique_groups(points, values, [np.array([0, 1]), np.array([2, 3])], 2)
    with pytest.raises(ParameterError, match="max_kicks"):
        improve_unique_groups(points, values, [np.array([0, 2]), np.array([1, 3])], 2,
                              max_kicks=-1)
    with pytest.raises(ParameterError, match="'m'"):
        improve_unique_groups(points, values, [np.array([0, 2])], 0)


def soon() -> float:
    return time.perf_counter() + 0.3


def first_release(points: np.ndarray, values: np.ndarray, m: int) -> WholeReleaseProblem:
    return WholeReleaseProblem(points=points, values=values,
                               bucket=np.full(len(values), -1), signatures=(), m=m,
                               domain_size=int(values.max()) + 1)


def test_a_release_without_old_rows_is_regrouped_and_stays_valid() -> None:
    start = random_start(7, 3, 50)
    assert start is not None
    points, values, groups = start
    problem = first_release(points, values, 3)
    regrouped = regroup_new_release(problem, groups, BoxExtent(points), deadline=soon(), seed=0)
    assert regrouped is not None
    assert not release_problems(problem, regrouped, np.zeros(0, np.int64))
    assert total(points, regrouped) < total(points, groups)


def test_old_rows_or_counterfeits_keep_the_groups_as_they_are() -> None:
    points = np.array([[0.0], [10.0], [0.1], [10.1]])
    values = np.array([0, 1, 1, 0])
    crossed = [np.array([0, 1]), np.array([2, 3])]
    problem = first_release(points, values, 2)
    assert regroup_new_release(problem, crossed, BoxExtent(points), deadline=soon(),
                               seed=0) is not None
    with_old = WholeReleaseProblem(points=points, values=values, bucket=np.array([0, 0, -1, -1]),
                                   signatures=(frozenset({0, 1}),), m=2, domain_size=2)
    assert regroup_new_release(with_old, crossed, BoxExtent(points), deadline=soon(),
                               seed=0) is None
    short = [np.array([0]), np.array([1]), np.array([2, 3])]  # groups with counterfeits
    assert regroup_new_release(problem, short, BoxExtent(points), deadline=soon(),
                               seed=0) is None


def test_the_model_answers_a_first_release_no_worse_than_the_regrouped_start() -> None:
    """solve_whole_release polishes a start without old rows by the search (same seed, so
    the same first descent): its answer costs at most what that descent reaches."""
    from republish.models.whole_release import solve_whole_release

    start = random_start(3, 3, 80)
    assert start is not None
    points, values, groups = start
    problem = first_release(points, values, 3)
    descent = improve_unique_groups(points, values, groups, 3, seed=0)
    assert descent.cost_after < descent.cost_before
    answer = solve_whole_release(problem, time_limit=2.0, hint=(groups, []), seed=0)
    assert answer.objective_a == 0
    assert answer.objective_b <= descent.cost_after + 1e-9


def test_single_rows_at_m_1_keep_their_groups() -> None:
    """At m = 1 a row may be alone: its group's box without it is empty, and a swap prices
    the partner alone (this crashed when the box was recomputed from the other rows)."""
    points = np.random.default_rng(0).random((6, 2))
    values = np.array([0, 1, 2, 0, 1, 2])
    found = improve_unique_groups(points, values, [np.array([i]) for i in range(6)], 1)
    assert found.cost_after == 0.0
    assert sorted(g.tolist() for g in found.groups) == [[i] for i in range(6)]


def test_search_share_of_a_release_without_old_rows() -> None:
    """The regrouping's budget: a fifth (at most 5 s) up to 400 rows; 70 % above, where
    column generation barely starts, unless the model prices from tables and has at
    least TABLED_SECONDS_PER_PAIR a pair of rows, when column generation converges and gets the
    time."""
    from republish.models import whole_release_polish as polish

    assert polish.unique_search_seconds(200, 10.0) == pytest.approx(2.0)
    assert polish.unique_search_seconds(200, 60.0, priced_from_tables=True) == 5.0
    assert polish.unique_search_seconds(2000, 10.0) == pytest.approx(7.0)
    assert polish.unique_search_seconds(2000, 60.0) == pytest.approx(42.0)
    assert polish.unique_search_seconds(2000, 60.0, priced_from_tables=True) == \
        pytest.approx(12.0)
    for rows in (1000, 2000):
        enough = polish.TABLED_SECONDS_PER_PAIR * rows * (rows - 1) / 2
        assert polish.unique_search_seconds(rows, enough, priced_from_tables=True) == \
            pytest.approx(0.2 * enough)
        short = 0.99 * enough
        assert polish.unique_search_seconds(rows, short, priced_from_tables=True) == \
            pytest.approx(0.7 * short)
    assert polish.unique_search_seconds(2000, 20.0, priced_from_tables=True) == \
        pytest.approx(4.0)
    assert polish.unique_search_seconds(2000, 10.0, priced_from_tables=True) == \
        pytest.approx(7.0)
    assert polish.unique_search_seconds(1000, 5.0, priced_from_tables=True) == \
        pytest.approx(1.0)
