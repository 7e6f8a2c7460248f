"""The §4 reduction: exact star optimum is 3n(d-1) exactly for 3DM yes-instances."""

from __future__ import annotations

import numpy as np
import pytest

from republish.errors import ParameterError
from republish.gadgets.three_dm import (
    reduction_table,
    sa_value,
    solve_three_dm,
    star_target,
)
from republish.models.star_minimization import solve_star_minimization
from republish.tables import encode_qis

D1 = ("1", "2", "3", "4")
D2 = ("a", "b", "c", "d")
D3 = ("alpha", "beta", "gamma", "delta")

INSTANCES = [
    # (n, points, has a 3DM)
    (1, [("1", "a", "alpha")], True),
    (2, [("1", "a", "alpha"), ("2", "b", "beta"), ("1", "b", "alpha")], True),
    (2, [("1", "a", "alpha"), ("1", "b", "beta"), ("2", "a", "beta")], False),
    (3, [("1", "a", "alpha"), ("2", "b", "gamma"), ("3", "c", "beta"), ("1", "c", "gamma")],
     True),
    (3, [("1", "a", "alpha"), ("2", "a", "beta"), ("3", "b", "gamma"), ("3", "c", "alpha")],
     False),
    (4, [("1", "a", "alpha"), ("2", "b", "beta"), ("3", "c", "gamma"), ("4", "d", "delta"),
         ("1", "b", "gamma"), ("2", "a", "delta")], True),
    (4, [("1", "a", "alpha"), ("2", "a", "beta"), ("3", "c", "gamma"), ("4", "d", "delta"),
         ("1", "b", "gamma"), ("2", "c", "delta")], False),
]


def optimum_stars(n: int, points: list[tuple[str, str, str]], m: int) -> int:
    table, schema = reduction_table(D1[:n], D2[:n], D3[:n], points, m)
    solution = solve_star_minimization(encode_qis(table, schema), table["B"].to_numpy(), 3,
                                       num_workers=2, time_limit=30)
    assert solution.status == "OPTIMAL" and solution.objective is not None
    return solution.objective


@pytest.mark.parametrize(("n", "points", "expected"), INSTANCES)
def test_star_optimum_meets_3n_d_minus_1_iff_3dm(n, points, expected):
    assert (solve_three_dm(D1[:n], D2[:n], D3[:n], points) is not None) == expected
    m = min(3 * n, max(3, n + 2))
    stars = optimum_stars(n, points, m)
    target = star_target(n, len(points))
    assert stars >= target  # Property 4
    assert (stars == target) == expected  # Lemma 4.5


def test_random_instances_with_every_sa_rule():
    rng = np.random.default_rng(4)
    outcomes = set()
    n = 3
    for m in (3, 5, 9):  # n >= m - 1, 2n >= m - 1 > n, m - 1 > 2n
        for planted in (True, False):
            cells = {(D1[rng.integers(0, n)], D2[rng.integers(0, n)], D3[rng.integers(0, n)])
                     for _ in range(4)}
            if planted:  # a random perfect matching among the points
                second, third = rng.permutation(n), rng.permutation(n)
                cells |= {(D1[i], D2[second[i]], D3[third[i]]) for i in range(n)}
            points = sorted(cells)
            answer = solve_three_dm(D1[:n], D2[:n], D3[:n], points) is not None
            stars = optimum_stars(n, points, m)
            assert (stars == star_target(n, len(points))) == answer
            outcomes.add(answer)
    assert outcomes == {True, False}


def test_table_properties_follow_the_construction():
    n, points, _ = INSTANCES[5]
    for m in range(3, 3 * n + 1):
        table, schema = reduction_table(D1, D2, D3, points, m)
        values = table["B"].astype(int).to_numpy()
        assert sorted(set(values)) == list(range(1, m + 1))
        assert np.bincount(values).max() <= n  # 3-eligible
        domain = np.arange(3 * n) // n
        # rows of different domains never share an SA value
        for u in set(values):
            assert len(set(domain[values == u])) == 1
        for name in schema.qi_names:
            assert (table[name] == 0).sum() == 3  # Property 1
    # Figure 1b: with n = 4 and m = 8, row 7 (value c) has SA 7 (the paper's example).
    assert sa_value(7, 4, 8) == 7
    table, _ = reduction_table(D1, D2, D3, points, 8)
    assert table.loc[6, "row"] == "c" and table.loc[6, "B"] == "7"


def test_bad_instances_are_rejected():
    with pytest.raises(ParameterError, match="disjoint"):
        reduction_table(("1",), ("1",), ("z",), [("1", "1", "z")], 3)
    with pytest.raises(ParameterError, match="not in D1 x D2 x D3"):
        reduction_table(("1",), ("a",), ("z",), [("1", "b", "z")], 3)
    with pytest.raises(ParameterError, match="between 3 and 3n"):
        sa_value(1, 1, 4)
