"""Group formation: exact models against brute force on tiny buckets and tables."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import brute_force_bucket
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.errors import InputError, ParameterError
from republish.generalization import Domain
from republish.heuristics.perimeter_split import split_bucket_min_perimeter
from republish.models.grouping.formation import (
    form_groups,
    grouping_objective,
    grouping_problems,
    partition_m_unique,
)
from republish.models.grouping.mip import bucket_columns, solve_set_partition


def _bucket(rng: np.random.Generator, s: int, k: int, d: int, fake_rate: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = s * k
    values = np.repeat([f"v{i}" for i in range(s)], k)
    fake = rng.random(n) < fake_rate
    while (~fake).sum() < k:
        fake[rng.integers(n)] = False
    points = rng.random((n, d))
    if rng.random() < 0.5:
        points = np.round(points * 3) / 3  # ties, as with categorical QIs
    points[fake] = np.nan
    return points, values, fake


@pytest.mark.parametrize("s,k", [(2, 5), (3, 3), (3, 4), (4, 3)])
@pytest.mark.parametrize("objective", ["perimeter", "ncp"])
def test_bucket_grouping_equals_brute_force(s: int, k: int, objective: str) -> None:
    rng = np.random.default_rng(100 * s + k)
    for _ in range(3):
        points, values, fake = _bucket(rng, s, k, int(rng.integers(1, 4)), 0.25)
        result = form_groups(points, values, fake, objective=objective,  # type: ignore[arg-type]
                             time_limit=10.0)
        assert result.status == "OPTIMAL"
        assert grouping_problems(values, fake, result.groups, s, sorted(set(values))) == []
        assert result.objective == pytest.approx(
            brute_force_bucket(points, values, fake, objective), rel=1e-6, abs=1e-9)
        assert result.bound == pytest.approx(result.objective)
        assert result.certificate.gap == 0.0


def _set_partitions(items: list[int]):  # type: ignore[no-untyped-def]
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        for i in range(len(part)):
            yield [*part[:i], [first, *part[i]], *part[i + 1:]]
        yield [[first], *part]


def _brute_partition(points: np.ndarray, values: np.ndarray, fake: np.ndarray, m: int,
                     objective: str) -> float:
    best = np.inf
    names = values.tolist()
    for part in _set_partitions(list(range(len(values)))):
        if any(len(rows) < m or len({names[i] for i in rows}) < len(rows)
               or fake[rows].all() for rows in part):
            continue
        groups = np.empty(len(values), dtype=np.int64)
        for label, rows in enumerate(part):
            groups[rows] = label
        best = min(best, grouping_objective(np.nan_to_num(points), fake, groups, objective))
    return best


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2, 8), m=st.integers(2, 3), d=st.integers(1, 2),
    seed=st.integers(0, 10**6), objective=st.sampled_from(["perimeter", "ncp"]),
)
def test_partition_equals_brute_force(n: int, m: int, d: int, seed: int, objective: str
                                      ) -> None:
    rng = np.random.default_rng(seed)
    values = rng.choice(["a", "b", "c", "d"], n)
    fake = rng.random(n) < 0.2
    points = rng.random((n, d))
    points[fake] = np.nan
    expected = _brute_partition(points, values, fake, m, objective)
    if np.isinf(expected):
        with pytest.raises(InputError):
            partition_m_unique(points, values, m, fake, objective=objective)  # type: ignore[arg-type]
        return
    result = partition_m_unique(points, values, m, fake, objective=objective)  # type: ignore[arg-type]
    assert result.status == "OPTIMAL"
    assert grouping_problems(values, fake, result.groups, m) == []
    assert result.objective == pytest.approx(expected, rel=1e-6, abs=1e-9)


def test_pairs_match_the_set_partitioning_model() -> None:
    """Signature size 2: the priced min-cost flow equals the k^2-column MIP."""
    rng = np.random.default_rng(7)
    for k in (30, 80):
        points, values, fake = _bucket(rng, 2, k, 3, 0.15)
        value_index = (values == "v1").astype(np.int64)
        columns = bucket_columns(np.nan_to_num(points), value_index, fake, k, "perimeter", 10**5)
        assert columns is not None
        reference = solve_set_partition(columns, len(values), 30.0)
        result = form_groups(points, values, fake)
        assert result.status == "OPTIMAL" and result.method == "min-cost flow"
        assert reference.objective is not None
        assert result.objective == pytest.approx(reference.objective, rel=1e-4)
        assert grouping_problems(values, fake, result.groups, 2, ["v0", "v1"]) == []


def test_pairs_stopped_early_keep_a_valid_grouping_and_bound() -> None:
    rng = np.random.default_rng(3)
    points = rng.random((3000, 2))
    values = np.repeat(["a", "b"], 1500)
    result = form_groups(points, values, time_limit=0.01)
    assert result.status in ("FEASIBLE", "OPTIMAL")
    assert grouping_problems(values, np.zeros(3000, bool), result.groups, 2, ["a", "b"]) == []
    assert result.bound is not None and result.bound <= result.objective + 1e-9


@settings(max_examples=15, deadline=None)
@given(s=st.integers(3, 4), k=st.integers(2, 6), seed=st.integers(0, 10**6),
       fake_rate=st.sampled_from([0.0, 0.2]))
def test_exact_never_worse_than_its_warm_start(s: int, k: int, seed: int, fake_rate: float
                                              ) -> None:
    rng = np.random.default_rng(seed)
    points, values, fake = _bucket(rng, s, k, 2, fake_rate)
    hint = split_bucket_min_perimeter(points, values).groups
    if grouping_problems(values, fake, hint, s, sorted(set(values))):
        hint = None  # the greedy may group counterfeits only; then there is no warm start
    result = form_groups(points, values, fake, hint_groups=hint, time_limit=10.0)
    if hint is not None:
        assert result.objective <= grouping_objective(points, fake, hint, "perimeter") + 1e-9
        assert result.certificate.heuristic_objective is not None
    assert grouping_problems(values, fake, result.groups, s, sorted(set(values))) == []


def test_above_the_size_limit_the_hint_or_a_round_robin_is_returned() -> None:
    rng = np.random.default_rng(5)
    points, values, fake = _bucket(rng, 3, 5, 2, 0.2)
    hint = split_bucket_min_perimeter(points, values).groups
    if grouping_problems(values, fake, hint, 3, ["v0", "v1", "v2"]):
        hint = None
    result = form_groups(points, values, fake, hint_groups=hint, size_limit=10, cpsat_rows=0)
    assert result.status == "HEURISTIC"
    assert result.method == ("hint" if hint is not None else "round-robin")
    plain = form_groups(points, values, fake, size_limit=10, cpsat_rows=0)
    assert plain.method == "round-robin"
    assert grouping_problems(values, fake, plain.groups, 3, ["v0", "v1", "v2"]) == []


def test_cpsat_fallback_improves_or_keeps_the_hint() -> None:
    rng = np.random.default_rng(11)
    points, values, fake = _bucket(rng, 3, 4, 2, 0.2)
    result = form_groups(points, values, fake, size_limit=1, cpsat_rows=60, time_limit=5.0)
    assert result.method == "cp-sat"
    assert result.objective == pytest.approx(brute_force_bucket(points, values, fake, "perimeter"))
    big = partition_m_unique(np.random.default_rng(1).random((9, 2)), list("abcabcabc"), 3,
                             size_limit=1)
    assert big.status == "HEURISTIC" and big.method == "count plan"
    assert grouping_problems(np.array(list("abcabcabc")), np.zeros(9, bool), big.groups, 3) == []


def test_counterfeits_take_the_box_but_count_in_the_perimeter() -> None:
    points = np.array([[0.0], [1.0], [np.nan], [0.5]])
    values = ["a", "b", "a", "b"]
    # One pair must be real: (0, 0.5) costs 2 * 0.5; the counterfeit a takes b = 1's box.
    result = form_groups(points, values)
    assert result.objective == pytest.approx(1.0)
    assert result.groups[0] == result.groups[3] and result.groups[1] == result.groups[2]
    # The other pairing: |G| = 2 times the length 1 of (0, 1); the counterfeit adds 0.
    groups = np.array([0, 0, 1, 1])
    assert grouping_objective(np.nan_to_num(points), np.isnan(points[:, 0]), groups,
                              "perimeter") == 2.0


def test_inputs_are_validated() -> None:
    points = np.array([[0.0], [1.0], [0.5]])
    with pytest.raises(InputError):
        form_groups(points, ["a", "b", "b"])  # unbalanced
    with pytest.raises(InputError):
        form_groups(np.array([[np.nan], [np.nan]]), ["a", "b"])  # no real row
    with pytest.raises(InputError):
        form_groups(np.array([[2.0], [0.0]]), ["a", "b"])  # not normalized
    with pytest.raises(ParameterError):
        form_groups(points[:2], ["a", "b"], objective="area")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        partition_m_unique(points, ["a", "a", "b"], 2)  # not 2-eligible
    raw = np.array([[20.0], [60.0], [40.0], [20.0]])
    scaled = form_groups(raw, ["a", "b", "a", "b"], domain=Domain.from_list([[20.0, 60.0]]))
    assert scaled.objective == pytest.approx(2 * 0.5)  # (20, 20) and (40, 60)


@settings(max_examples=200, deadline=None)
@given(s=st.integers(3, 4), k=st.integers(2, 5), seed=st.integers(0, 10**6),
       fake_rate=st.sampled_from([0.0, 0.2]), with_hint=st.booleans(),
       restricted=st.integers(1, 3))
def test_price_and_fix_equals_the_full_mip(s: int, k: int, seed: int, fake_rate: float,
                                           with_hint: bool, restricted: int,
                                           ) -> None:
    """Forced on small buckets (any column count, a tiny restricted MIP), price-and-fix
    finds the optimum of the plain set-partitioning MIP and a bound below it."""
    import republish.models.grouping.mip as mip

    rng = np.random.default_rng(seed)
    points, values, fake = _bucket(rng, s, k, 2, fake_rate)
    value_index = np.unique(values, return_inverse=True)[1]
    columns = bucket_columns(np.nan_to_num(points), value_index, fake, k, "perimeter", 10**6)
    assert columns is not None
    hint = split_bucket_min_perimeter(points, values).groups if with_hint else None
    plain = solve_set_partition(columns, len(values), 30.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mip, "PRUNE_COLUMNS", 0)
        patch.setattr(mip, "RESTRICTED_PER_ROW", restricted)
        fixed = solve_set_partition(columns, len(values), 30.0, hint)
    assert plain.objective is not None and fixed.objective is not None
    assert fixed.status == "OPTIMAL"
    assert fixed.objective == pytest.approx(plain.objective, rel=1e-9, abs=1e-9)
    assert fixed.bound is not None and fixed.bound <= fixed.objective + 1e-9
    assert fixed.groups is not None
    assert grouping_problems(values, fake, fixed.groups, s, sorted(set(values))) == []


def test_a_bucket_whose_model_the_time_left_cannot_afford_is_not_enumerated() -> None:
    """40^3 = 64,000 candidate groups need about 1.3 s to enumerate, build and solve; with
    0.5 s the hint is kept (enumeration cannot be interrupted, so it must not start)."""
    from republish.models.grouping.mip import MIP_SECONDS_PER_COLUMN

    rng = np.random.default_rng(21)
    points = rng.random((120, 2))
    values = np.repeat(["a", "b", "c"], 40)
    assert 40**3 * MIP_SECONDS_PER_COLUMN > 0.5
    hint = split_bucket_min_perimeter(points, values).groups
    result = form_groups(points, values, hint_groups=hint, time_limit=0.5, cpsat_rows=0)
    assert result.method == "hint" and result.status == "HEURISTIC"
    assert "time left affords" in result.certificate.detail
