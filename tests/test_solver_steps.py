"""Solver steps: heuristic first, exact model hinted with it, fallback, certificates."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from republish.errors import InputError, ParameterError
from republish.heuristics.perimeter_split import split_buckets_min_perimeter
from republish.models.bucket_assignment import bucket_assignment_problems
from republish.models.grouping.formation import grouping_objective, grouping_problems
from republish.problems.buckets import BucketCounts
from republish.solver.steps import (
    bucket_step,
    greedy_counts,
    group_step,
    partition_step,
    repair_groups,
    split_step,
)

VALUES = [f"v{i}" for i in range(6)]


def _buckets(rng: np.random.Generator, count: int, m: int) -> list[BucketCounts]:
    out = []
    for _ in range(count):
        signature = tuple(rng.choice(VALUES, int(rng.integers(m, m + 2)), replace=False))
        counts = {str(v): int(rng.integers(0, 4)) for v in signature}
        counts[signature[0]] = max(counts[signature[0]], 1)
        out.append(BucketCounts(signature, counts))
    return out


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3), count=st.integers(1, 6),
       eligibility=st.sampled_from(["counterfeit", "delete", "hybrid"]))
def test_bucket_step_never_worse_than_the_greedy(seed: int, m: int, count: int,
                                                 eligibility: str) -> None:
    rng = np.random.default_rng(seed)
    buckets = _buckets(rng, count, m)
    new = {v: int(rng.integers(0, 6)) for v in VALUES}
    try:
        result = bucket_step(buckets, new, m, eligibility=eligibility,  # type: ignore[arg-type]
                             allow_new_values=True, new_values=VALUES, time_limit=10.0)
    except InputError:
        return
    assert result.status in ("OPTIMAL", "FEASIBLE", "HEURISTIC")
    assert bucket_assignment_problems(buckets, new, m, result, eligibility != "counterfeit",
                                      True, VALUES) == []
    if result.certificate.heuristic_objective is not None:
        assert result.objective <= result.certificate.heuristic_objective + 1e-9
    assert result.certificate.bound is not None
    assert result.certificate.bound <= result.objective + 1e-9
    assert set(result.certificate.times) == {"heuristic", "model"}
    greedy = greedy_counts(buckets, new, m, eligibility, True, VALUES, 1.0)  # type: ignore[arg-type]
    if greedy is not None and greedy.objective == result.objective:
        # On a tie the paper's counts are kept (they keep later releases cheaper).
        assert (result.from_new, result.counterfeits) == (greedy.from_new, greedy.counterfeits)
        assert result.status == ("OPTIMAL" if result.certificate.bound >= greedy.objective
                                 - 1e-9 else "HEURISTIC")


def test_bucket_step_modes_and_tiny_time_limit() -> None:
    rng = np.random.default_rng(4)
    buckets = _buckets(rng, 300, 2)
    new = {v: 400 for v in VALUES}
    heuristic = bucket_step(buckets, new, 2, mode="heuristic")
    assert heuristic.status == "HEURISTIC" and heuristic.bound is None
    assert "model" not in heuristic.certificate.times
    quick = bucket_step(buckets, new, 2, mode="exact", time_limit=0.01)
    assert quick.status == "HEURISTIC"
    assert bucket_assignment_problems(buckets, new, 2, quick) == []
    exact = bucket_step(buckets, new, 2, mode="auto", time_limit=10.0)
    assert exact.status == "OPTIMAL"
    assert exact.objective <= heuristic.objective
    assert exact.certificate.gap == 0.0
    with pytest.raises(ParameterError):
        bucket_step(buckets, new, 2, mode="fast")  # type: ignore[arg-type]


def test_bucket_step_refuses_an_unpublishable_leftover() -> None:
    buckets = [BucketCounts(("a", "b"), {"a": 1, "b": 1})]
    with pytest.raises(InputError):
        bucket_step(buckets, {"c": 3}, 2)  # one leftover value, no deferrals, no new values


def _bucket_rows(rng: np.random.Generator, s: int, k: int, fake_rate: float = 0.1
                 ) -> tuple[np.ndarray, np.ndarray]:
    points = rng.random((s * k, 3))
    points[rng.random(s * k) < fake_rate] = np.nan
    return points, np.repeat(VALUES[:s], k)


def test_group_step_exact_heuristic_and_tiny_time_limit() -> None:
    rng = np.random.default_rng(8)
    points, values = _bucket_rows(rng, 3, 12)
    fake = np.isnan(points[:, 0])
    exact = group_step(points, values, time_limit=10.0)
    assert exact.status == "OPTIMAL"
    assert exact.objective <= exact.certificate.heuristic_objective + 1e-9  # type: ignore[operator]
    quick = group_step(points, values, time_limit=0.01)
    assert quick.status == "HEURISTIC"
    assert grouping_problems(values, fake, quick.groups, 3, VALUES[:3]) == []
    pairs_points, pairs_values = _bucket_rows(rng, 2, 1500, 0.0)
    pairs = group_step(pairs_points, pairs_values, time_limit=0.01)
    assert pairs.status == "HEURISTIC" and pairs.method == "perimeter split"
    solved = group_step(pairs_points[:400], np.repeat(VALUES[:2], 200), time_limit=10.0)
    assert solved.status == "OPTIMAL"


def test_split_step_over_many_buckets() -> None:
    rng = np.random.default_rng(2)
    parts = [_bucket_rows(rng, s, k) for s, k in [(2, 30), (3, 5), (3, 1), (4, 3)]]
    points = np.vstack([p for p, _ in parts])
    values = np.concatenate([v for _, v in parts])
    buckets = np.repeat(np.arange(4), [len(v) for _, v in parts])
    fake = np.isnan(points[:, 0])
    heuristic, h_cert = split_step(points, values, buckets, mode="heuristic")
    exact, cert = split_step(points, values, buckets, mode="exact", time_limit=20.0)
    for groups in (heuristic, exact):
        for b in range(4):
            rows = buckets == b
            signature = sorted(set(values[rows].tolist()))
            assert grouping_problems(values[rows], fake[rows], groups[rows], len(signature),
                                     signature) == []
        # No group spans two buckets.
        assert all(len(set(buckets[groups == g].tolist())) == 1 for g in np.unique(groups))
    assert cert.status == "OPTIMAL"
    assert cert.objective == pytest.approx(
        grouping_objective(np.nan_to_num(points), fake, exact, "perimeter"))
    assert cert.objective <= h_cert.objective + 1e-9
    assert h_cert.status == "HEURISTIC"


def test_partition_step_small_exact_large_heuristic() -> None:
    rng = np.random.default_rng(3)
    values = np.array([VALUES[i % 4] for i in range(20)])
    points = rng.random((20, 2))
    small = partition_step(points, values, 2, time_limit=10.0)
    assert small.status == "OPTIMAL"
    assert grouping_problems(values, np.zeros(20, bool), small.groups, 2) == []
    assert small.objective <= small.certificate.heuristic_objective + 1e-9  # type: ignore[operator]
    big_values = np.array([VALUES[i % 5] for i in range(3000)])
    big = partition_step(rng.random((3000, 2)), big_values, 3, time_limit=0.01)
    assert big.status == "HEURISTIC"
    assert grouping_problems(big_values, np.zeros(3000, bool), big.groups, 3) == []


def test_repair_moves_a_real_row_into_a_counterfeit_only_group() -> None:
    values = np.array(["a", "a", "b", "b"])
    fake = np.array([False, True, False, True])
    groups = np.array([0, 1, 0, 1])  # group 1 holds both counterfeits
    fixed = repair_groups(values, fake, groups)
    assert grouping_problems(values, fake, fixed, 2, ["a", "b"]) == []


def test_release_pipeline_with_exact_steps_is_verified_and_no_worse() -> None:
    from republish.datasets import dynamic_series, synthetic_census
    from republish.solver.m_invariance import publish_m_invariant

    table, schema = synthetic_census(1500, seed=3)
    first, second = dynamic_series(table, initial=600, r=150, releases=2, seed=4)
    state = publish_m_invariant(first, schema, 3, rng=np.random.default_rng(0)).state
    greedy = publish_m_invariant(second, schema, 3, previous=state,
                                 rng=np.random.default_rng(1), eligibility="hybrid")
    exact = publish_m_invariant(second, schema, 3, previous=state,
                                rng=np.random.default_rng(1), eligibility="hybrid",
                                mode="auto", time_limit=5.0)
    assert exact.report.ok and greedy.report.ok
    assert exact.certificate.status in ("OPTIMAL", "FEASIBLE", "HEURISTIC")
    assert exact.counterfeits + exact.deferred <= greedy.counterfeits + greedy.deferred
    if exact.certificate.status == "OPTIMAL":
        assert exact.certificate.bound == exact.counterfeits + exact.deferred


@pytest.mark.parametrize("budget", [0.01, 3.0])
def test_one_time_budget_covers_every_model_of_a_release_step(
    budget: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every model of an exact release step is called with a limit that ends by the step's
    deadline (the step starts before the counts model is called, so call time + limit <=
    that call + budget); the counts model gets at most half."""
    import time

    from republish.datasets import dynamic_series, synthetic_census
    from republish.solver import m_invariance_exact
    from republish.solver.m_invariance import publish_m_invariant

    table, schema = synthetic_census(1200, seed=5)
    first, second = dynamic_series(table, initial=600, r=200, releases=2, seed=6)
    state = publish_m_invariant(first, schema, 3, rng=np.random.default_rng(0)).state
    calls: list[tuple[str, float, float]] = []

    def recorder(name: str, real: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            calls.append((name, time.perf_counter(), kwargs["time_limit"]))
            return real(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(m_invariance_exact, "bucket_step",
                        recorder("counts", m_invariance_exact.bucket_step))
    monkeypatch.setattr(m_invariance_exact, "split_step",
                        recorder("groups", m_invariance_exact.split_step))
    result = publish_m_invariant(second, schema, 3, previous=state, mode="exact",
                                 time_limit=budget, rng=np.random.default_rng(1))
    assert result.report.ok
    assert [name for name, _, _ in calls] == ["counts", "groups"]
    (_, counts_at, counts_limit), (_, groups_at, groups_limit) = calls
    assert counts_limit <= 0.5 * budget or counts_limit == 1e-3
    # 1 ms: the limit is computed just before the recorded call.
    assert groups_at + groups_limit <= counts_at + budget + 1e-3 or groups_limit == 1e-3
    if budget < 0.05:
        assert result.certificate.status == "HEURISTIC"


def test_solver_options_are_validated_at_the_release_entry() -> None:
    from republish.datasets import synthetic_census
    from republish.solver.m_invariance import publish_m_invariant

    table, schema = synthetic_census(50, seed=1)
    with pytest.raises(ParameterError, match="time_limit"):
        publish_m_invariant(table, schema, 2, mode="exact", time_limit=0)
    with pytest.raises(ParameterError, match="mode"):
        publish_m_invariant(table, schema, 2, mode="fast")  # type: ignore[arg-type]


def test_exact_mode_does_not_enumerate_a_large_size_three_bucket() -> None:
    """k^s = 80^3 = 512,000 candidate groups exceed EXACT_COLUMNS: the step must not hand
    them to the MIP (memory), and still returns a valid grouping."""
    from republish.solver.steps import EXACT_COLUMNS

    rng = np.random.default_rng(8)
    k = 80
    assert k**3 > EXACT_COLUMNS
    points = rng.random((3 * k, 2))
    values = np.repeat(VALUES[:3], k)
    result = group_step(points, values, mode="exact", time_limit=1.0)
    assert result.method != "set-partitioning MIP"
    assert grouping_problems(values, np.zeros(3 * k, bool), result.groups, 3,
                             list(VALUES[:3])) == []


def test_on_a_tie_the_bucket_step_keeps_the_greedy_counts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A model answer that only ties the greedy must not replace it (the greedy's counts
    keep later releases cheaper); the model's bound then certifies the greedy optimal."""
    import dataclasses

    from republish.solver import steps

    buckets = [BucketCounts(("v0", "v1"), {"v0": 3, "v1": 1}),
               BucketCounts(("v2", "v3"), {"v2": 2, "v3": 2})]
    new = {"v1": 1, "v4": 2, "v5": 2}
    greedy = greedy_counts(buckets, new, 2, "counterfeit", True, VALUES, 1.0)
    assert greedy is not None

    def tying_model(*args: Any, **kwargs: Any) -> Any:
        hint = kwargs["hint"]
        return dataclasses.replace(hint, status="OPTIMAL", bound=hint.objective,
                                   wall_time_s=123.0)

    monkeypatch.setattr(steps, "solve_bucket_assignment", tying_model)
    result = bucket_step(buckets, new, 2, mode="exact", allow_new_values=True,
                         new_values=VALUES)
    assert result.wall_time_s != 123.0  # the greedy's, not the model's
    assert result.status == "OPTIMAL" and result.certificate.bound == greedy.objective


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3), count=st.integers(1, 5))
def test_eligibility_counterfeits_go_to_the_most_frequent_values(
        seed: int, m: int, count: int) -> None:
    """Same number of counterfeits and a valid answer; the first value of the order that
    has room takes as many as it can (the rare values' counterfeits would come back in
    every later release)."""
    from republish.solver.frequent_counterfeits import prefer_frequent_values

    rng = np.random.default_rng(seed)
    buckets = _buckets(rng, count, m)
    new = {v: int(rng.integers(0, 5)) for v in VALUES[: m + 1]}
    greedy = greedy_counts(buckets, new, m, "counterfeit", True, VALUES, 1.0)
    if greedy is None:
        return
    order = list(rng.permutation(VALUES))
    moved = prefer_frequent_values(greedy, order, m, VALUES)
    total = sum(greedy.eligibility_counterfeits.values())
    assert sum(moved.eligibility_counterfeits.values()) == total
    assert moved.objective == greedy.objective
    assert bucket_assignment_problems(buckets, new, m, moved, False, True, VALUES) == []
    if total:
        published = dict(greedy.leftover)
        cap = min((sum(published.values()) + total) // m, sum(published.values()))
        first = next(v for v in order if cap - published.get(v, 0) > 0)
        assert moved.eligibility_counterfeits[first] == min(cap - published.get(first, 0),
                                                            total)


def test_bucket_step_applies_the_value_order() -> None:
    buckets = [BucketCounts(("v0", "v1"), {"v0": 2, "v1": 2})]
    new = {"v2": 4}  # one value left over: counterfeits of other values make it 2-eligible
    frequent_last = bucket_step(buckets, new, 2, mode="heuristic", allow_new_values=True,
                                new_values=VALUES, value_order=VALUES[::-1])
    assert frequent_last.eligibility_counterfeits == {"v5": 4}
    frequent_first = bucket_step(buckets, new, 2, mode="heuristic", allow_new_values=True,
                                 new_values=VALUES, value_order=VALUES)
    assert frequent_first.eligibility_counterfeits == {"v0": 4}


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.integers(0, 12), min_size=3, max_size=6), m=st.integers(2, 4))
def test_heuristic_counterfeits_move_to_frequent_values(counts: list[int], m: int) -> None:
    """Algorithm 1 water-fills the rarest values; the heuristic pipeline moves the same
    number of counterfeits to the most frequent values that can take them, and the
    result stays m-eligible."""
    from republish.heuristics.eligibility import minimal_superset
    from republish.problems.eligibility import is_m_eligible
    from republish.solver.frequent_counterfeits import prefer_frequent_solution

    named = {f"v{i}": c for i, c in enumerate(counts) if c}
    assume(len(named) >= 1 and sum(named.values()) >= 1)
    greedy = minimal_superset(named, m, allow_new_values=True, new_values=["x1", "x2", "x3"])
    order = sorted(named, key=lambda v: -named[v]) + ["x1", "x2", "x3"]
    moved = prefer_frequent_solution(greedy, order, ["x1", "x2", "x3"])
    assert moved.total_counterfeits == greedy.total_counterfeits
    assert is_m_eligible(moved.target_counts, m)
    if moved is not greedy:  # never a rarer value while an earlier one had room
        used = [order.index(v) for v in moved.counterfeits]
        assert used == sorted(used)


def _partition(groups: np.ndarray) -> set[frozenset[int]]:
    return {frozenset(np.flatnonzero(groups == g).tolist()) for g in np.unique(groups)}


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["heuristic", "auto"]))
@example(126944569, "heuristic")  # every bucket one group: OPTIMAL (found in session 7)
def test_split_step_without_models_keeps_the_greedy_split(seed: int, mode: str) -> None:
    # buckets left to the heuristic keep the release's §4.3 split (the certificate's warm
    # start) instead of being split again one by one
    rng = np.random.default_rng(seed)
    values, buckets = [], []
    for b in range(int(rng.integers(1, 5))):
        signature = rng.choice(6, size=int(rng.integers(2, 4)), replace=False)
        k = int(rng.integers(1, 40))
        values += [f"v{v}" for v in signature for _ in range(k)]
        buckets += [b] * (k * len(signature))
    order = rng.permutation(len(values))
    labels = np.array(values, dtype=object)[order]
    bucket_of = np.array(buckets)[order]
    points = rng.random((len(labels), 2))
    fake = rng.random(len(labels)) < 0.05
    points[fake] = np.nan  # counterfeits
    # a budget too short for any model: every bucket is grouped heuristically
    groups, certificate = split_step(points, labels, bucket_of, mode=mode,  # type: ignore[arg-type]
                                     time_limit=1e-6)
    greedy = split_buckets_min_perimeter(points, labels.astype(str), bucket_of).groups
    reference = greedy.copy()
    for b in np.unique(bucket_of):
        rows = np.flatnonzero(bucket_of == b)
        reference[rows] = repair_groups(labels[rows].astype(str), fake[rows], greedy[rows])
    assert _partition(groups) == _partition(reference)
    # a bucket of one group has nothing to choose: only then is the grouping proven
    one_group = all(len(set(labels[bucket_of == b].tolist())) == int((bucket_of == b).sum())
                    for b in np.unique(bucket_of))
    assert certificate.status == ("OPTIMAL" if one_group else "HEURISTIC")
    expected = grouping_objective(np.nan_to_num(points), fake, reference, "perimeter")
    assert certificate.objective == pytest.approx(expected)
    for g in np.unique(groups):  # one row per value of its bucket in every group
        members = np.flatnonzero(groups == g)
        assert len(set(labels[members].tolist())) == len(members)
        assert len(set(bucket_of[members].tolist())) == 1


def _repair_groups_reference(values: np.ndarray, fake: np.ndarray,
                             groups: np.ndarray) -> np.ndarray:
    """repair_groups as it was (a pass over the rows per group), the reference."""
    groups = groups.copy()
    reals = {int(g): int((~fake[groups == g]).sum()) for g in np.unique(groups)}
    for g in [g for g, r in reals.items() if r == 0]:
        for i in np.flatnonzero(groups == g).tolist():
            candidates = np.flatnonzero((values == values[i]) & ~fake & (groups != g))
            donors = [j for j in candidates.tolist() if reals[int(groups[j])] >= 2]
            if donors:
                j = donors[0]
                groups[i], groups[j] = groups[j], g
                reals[int(groups[i])] -= 1
                reals[g] += 1
                break
    return groups


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_repair_groups_equals_the_pass_per_group_form(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    values = rng.integers(0, 4, n).astype(str).astype(object)
    fake = rng.random(n) < rng.random()
    groups = rng.integers(0, max(1, n // 2), n)
    np.testing.assert_array_equal(repair_groups(values, fake, groups),
                                  _repair_groups_reference(values, fake, groups))
