"""The pairing lower bound on group formation against brute force and the exact MIP."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import brute_force_bucket
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.models.grouping.bound import pairing_lower_bound
from republish.models.grouping.mip import bucket_columns, solve_set_partition


def _bucket(seed: int, s: int, k: int, d: int, fake_rate: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    value_index = np.repeat(np.arange(s), k)
    fake = rng.random(s * k) < fake_rate
    while (~fake).sum() < k:
        fake[rng.integers(s * k)] = False
    points = np.round(rng.random((s * k, d)) * 4) / 4  # ties, as with categorical QIs
    return points, value_index, fake


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), shape=st.sampled_from([(2, 5), (3, 3), (3, 4), (4, 3)]),
       d=st.integers(1, 3), fake_rate=st.sampled_from([0.0, 0.25]),
       objective=st.sampled_from(["perimeter", "ncp"]))
def test_bound_never_exceeds_the_brute_force_optimum(
    seed: int, shape: tuple[int, int], d: int, fake_rate: float, objective: str
) -> None:
    s, k = shape
    points, value_index, fake = _bucket(seed, s, k, d, fake_rate)
    optimum = brute_force_bucket(points, value_index, fake, objective)
    bound = pairing_lower_bound(points, value_index, fake, objective, 10.0)
    assert bound is not None
    assert bound <= optimum + 1e-9
    if s == 2:  # the pairing is the whole problem
        assert bound == pytest.approx(optimum, abs=2 * d * k / 10**5 + 1e-9)


def test_bound_is_close_to_the_optimum_on_a_medium_bucket() -> None:
    """A bound worth reporting: within 35% of the MIP optimum on 3 x 15 uniform rows."""
    points, value_index, fake = _bucket(4, 3, 15, 2, 0.0)
    points = np.random.default_rng(4).random(points.shape)
    columns = bucket_columns(points, value_index, fake, 15, "perimeter", 10**5)
    assert columns is not None
    optimum = solve_set_partition(columns, len(value_index), 30.0).objective
    assert optimum is not None
    bound = pairing_lower_bound(points, value_index, fake, "perimeter", 10.0)
    assert bound is not None and 0.65 * optimum <= bound <= optimum + 1e-9


def test_no_time_gives_no_bound() -> None:
    points, value_index, fake = _bucket(1, 3, 4, 2, 0.0)
    assert pairing_lower_bound(points, value_index, fake, "perimeter", 0.0) is None


def test_a_heuristic_grouping_gets_the_pairing_bound() -> None:
    """Above the MIP and CP-SAT sizes the greedy split is returned with the pairing bound,
    so its gap is finite; the bound stays below the grouping's objective."""
    from republish.heuristics.perimeter_split import split_bucket_min_perimeter
    from republish.models.grouping.formation import form_groups

    rng = np.random.default_rng(12)
    points = rng.random((3 * 200, 2))
    values = np.repeat(["a", "b", "c"], 200)
    hint = split_bucket_min_perimeter(points, values).groups
    result = form_groups(points, values, hint_groups=hint, size_limit=1000, cpsat_rows=10)
    assert result.status == "HEURISTIC" and result.method == "hint"
    assert result.bound is not None and 0 < result.bound <= result.objective
    assert result.certificate.bound == result.bound
    assert "pairing bound" in result.certificate.detail
    assert result.certificate.gap is not None and result.certificate.gap < 1
