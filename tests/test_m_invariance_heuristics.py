"""The m-invariance paper's greedy phases: division, balancing, Assign (Fig. 3), split (§4.3)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.errors import InputError, ParameterError
from republish.heuristics.assign import assign_new_rows, largest_alpha
from republish.heuristics.balancing import balance_buckets
from republish.heuristics.division import divide_by_signature
from republish.heuristics.perimeter_split import (
    split_bucket_min_perimeter,
    split_buckets_min_perimeter,
)

VALUES = [f"v{i}" for i in range(8)]


@st.composite
def eligible_counts(draw: st.DrawFn) -> tuple[dict[str, int], int]:
    m = draw(st.integers(2, 5))
    size = draw(st.integers(m, 8))
    counts = draw(st.lists(st.integers(0, 12), min_size=size, max_size=size))
    counts = [c for c in counts if c > 0]
    if len(counts) < m:
        counts = counts + [1] * (m - len(counts))
    # Raise the small counts until no value exceeds |S|/m (counterfeits, Algorithm 1).
    while m * max(counts) > sum(counts):
        counts[counts.index(min(counts))] += 1
    return {VALUES[i]: c for i, c in enumerate(counts)}, m


def brute_alpha(counts: list[int], beta: int, m: int) -> int:
    """Inequalities 5-7 checked in exact arithmetic for every candidate α."""
    if beta > len(counts):
        return 0
    gamma = sum(counts)
    n_next = counts[beta] if beta < len(counts) else 0
    best = 0
    for alpha in range(1, counts[beta - 1] + 1):
        rest = Fraction(gamma - alpha * beta, m)
        if counts[beta - 1] >= alpha and counts[0] - alpha <= rest and n_next <= rest:
            best = alpha
    return best


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=2, max_size=7), st.integers(2, 5), st.integers(2, 7))
def test_largest_alpha_matches_brute_force(counts: list[int], m: int, beta: int) -> None:
    counts = sorted(counts, reverse=True)
    if beta < m:
        beta = m
    assert largest_alpha(counts, beta, m) == brute_alpha(counts, beta, m)


@settings(max_examples=150, deadline=None)
@given(eligible_counts())
def test_assign_lemma_5(case: tuple[dict[str, int], int]) -> None:
    """Every row of an m-eligible S− lands in a balanced bucket with >= m values."""
    counts, m = case
    result = assign_new_rows(counts, m)
    received: dict[str, int] = dict.fromkeys(counts, 0)
    for signature, per_value in result.buckets.items():
        assert len(signature) >= m
        assert set(per_value) == set(signature)
        assert len(set(per_value.values())) == 1  # balanced
        for value, count in per_value.items():
            received[value] += count
    assert received == counts
    for values, alpha in result.moves:
        assert alpha >= 1 and len(values) >= m


def test_assign_paper_style_example() -> None:
    result = assign_new_rows({"flu": 2, "gastritis": 2}, 2)
    assert result.moves == ((("flu", "gastritis"), 2),)


def test_assign_refuses_ineligible_counts() -> None:
    with pytest.raises(ParameterError, match="not 3-eligible"):
        assign_new_rows({"a": 5, "b": 3, "c": 1, "d": 1}, 3)
    with pytest.raises(ParameterError):
        assign_new_rows({"a": 1, "b": 1}, 1)


def test_division_groups_equal_signatures() -> None:
    signatures = [frozenset({"a", "b"}), frozenset({"b", "c"}), frozenset({"a", "b"})]
    division = divide_by_signature([0, 1, 2, 0], signatures, ["a", "c", "b", "a"])
    assert len(division.signatures) == 3
    assert division.bucket_of_row[0] == division.bucket_of_row[3]
    assert division.counts[division.bucket_of_row[0]] == {"a": 2, "b": 0}
    with pytest.raises(InputError, match="lacks that value"):
        divide_by_signature([1], signatures, ["a"])


def test_balancing_uses_new_rows_then_counterfeits() -> None:
    # The hospital example: {d, b} has Bob only, {d, f, g} has Jane and Linda,
    # {d, g} has Steve; new rows are flu x2, gastritis x2, dyspepsia x1.
    counts = [{"dyspepsia": 1, "bronchitis": 0}, {"dyspepsia": 1, "flu": 0, "gastritis": 1},
              {"dyspepsia": 0, "gastritis": 1}, {"flu": 1, "gastritis": 1}]
    available = {"flu": 2, "gastritis": 2, "dyspepsia": 1}
    result = balance_buckets(counts, available)
    assert result.targets == (1, 1, 1, 1)
    assert result.counterfeits[0] == {"bronchitis": 1}
    assert result.from_new[1] == {"flu": 1} and result.from_new[2] == {"dyspepsia": 1}
    assert result.total_counterfeits == 1
    assert result.remaining == {"flu": 1, "gastritis": 2}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 4), min_size=2, max_size=4), min_size=1, max_size=5),
    st.lists(st.integers(0, 5), min_size=4, max_size=4),
)
def test_balancing_balances(raw: list[list[int]], new: list[int]) -> None:
    counts = [{VALUES[i]: c for i, c in enumerate(row)} for row in raw if max(row) > 0]
    available = {VALUES[i]: c for i, c in enumerate(new)}
    result = balance_buckets(counts, available)
    used = dict.fromkeys(available, 0)
    for bucket, target in enumerate(result.targets):
        for value, count in counts[bucket].items():
            filled = result.from_new[bucket].get(value, 0)
            faked = result.counterfeits[bucket].get(value, 0)
            assert count + filled + faked == target
            used[value] += filled
    for value, count in available.items():
        assert used[value] + result.remaining.get(value, 0) == count
        if any(result.counterfeits[b].get(value, 0) for b in range(len(counts))):
            assert result.remaining.get(value, 0) == 0  # counterfeits only when rows ran out


def _check_groups(groups: np.ndarray, values: np.ndarray, buckets: np.ndarray) -> None:
    for group in np.unique(groups):
        members = groups == group
        assert len(set(buckets[members].tolist())) == 1
        bucket_values = set(values[buckets == buckets[members][0]].tolist())
        assert sorted(values[members].tolist()) == sorted(bucket_values)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_split_makes_one_row_per_value(data: st.DataObject) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    buckets_spec = data.draw(
        st.lists(st.tuples(st.integers(2, 4), st.integers(1, 6)), min_size=1, max_size=4)
    )
    d = data.draw(st.integers(1, 3))
    values, buckets = [], []
    for bucket, (s, k) in enumerate(buckets_spec):
        for v in range(s):
            values += [f"v{bucket % 2 + v}"] * k
            buckets += [bucket] * k
    values_array, bucket_array = np.array(values), np.array(buckets)
    points = rng.integers(0, 5, size=(len(values), d)) / 4.0
    points[rng.random(len(values)) < 0.2] = np.nan  # counterfeits
    result = split_buckets_min_perimeter(points, values_array, bucket_array)
    assert result.group_count == sum(k for _, k in buckets_spec)
    _check_groups(result.groups, values_array, bucket_array)


def _perimeter_sum(points: np.ndarray, parts: list[np.ndarray]) -> float:
    total = 0.0
    for part in parts:
        real = points[part][~np.isnan(points[part]).any(axis=1)]
        lengths = real.max(axis=0) - real.min(axis=0) if len(real) else 0.0
        total += len(part) * float(np.sum(lengths))
    return total


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 4), st.integers(1, 3), st.integers(0, 10_000))
def test_split_of_two_groups_is_the_best_scheme(s: int, d: int, seed: int) -> None:
    """With k = 2 the split is one cut: the minimum perimeter sum over the d schemes."""
    rng = np.random.default_rng(seed)
    values = np.repeat(np.arange(s), 2)
    points = rng.random((2 * s, d))
    result = split_bucket_min_perimeter(points, values)
    chosen = [np.flatnonzero(result.groups == g) for g in range(2)]
    best = np.inf
    for a in range(d):
        first = []
        for v in range(s):
            rows = np.flatnonzero(values == v)
            first.append(rows[np.argmin(points[rows, a])])
        first_array = np.array(first)
        second = np.setdiff1d(np.arange(2 * s), first_array)
        best = min(best, _perimeter_sum(points, [first_array, second]))
    assert _perimeter_sum(points, chosen) == pytest.approx(best)


def test_split_prefers_tight_groups() -> None:
    # Two clusters, each holding one a and one b: the split must not mix them.
    points = np.array([[0.0], [0.01], [1.0], [0.99]])
    values = np.array(["a", "b", "a", "b"])
    groups = split_bucket_min_perimeter(points, values).groups
    assert groups[0] == groups[1] and groups[2] == groups[3] and groups[0] != groups[2]


def test_split_counterfeits_sort_first() -> None:
    # One counterfeit of 'a'; it goes with the b nearest the start of every order.
    points = np.array([[np.nan], [0.9], [0.0], [1.0]])
    values = np.array(["a", "a", "b", "b"])
    groups = split_bucket_min_perimeter(points, values).groups
    assert groups[0] == groups[2] and groups[1] == groups[3]


def test_split_refuses_unbalanced_and_unnormalized() -> None:
    with pytest.raises(InputError, match="not balanced"):
        split_bucket_min_perimeter(np.zeros((3, 1)), np.array(["a", "a", "b"]))
    with pytest.raises(InputError, match="normalized"):
        split_bucket_min_perimeter(np.full((2, 1), 3.0), np.array(["a", "b"]))


def test_split_is_exhaustive_on_tiny_buckets() -> None:
    """Every group is one row per value for all small shapes (no row lost or repeated)."""
    rng = np.random.default_rng(3)
    for s, k in itertools.product(range(2, 4), range(1, 6)):
        values = np.repeat(np.arange(s), k)
        result = split_bucket_min_perimeter(rng.random((s * k, 2)), values)
        assert result.group_count == k
        assert sorted(np.bincount(result.groups).tolist()) == [s] * k
