"""Bucket assignment: the m-unique lemma and the exact count model against brute force."""

from __future__ import annotations

import itertools
import math
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.errors import InputError, ParameterError
from republish.heuristics.balancing import balance_buckets, forced_counterfeits
from republish.models.bucket_assignment import (
    BucketAssignment,
    bucket_assignment_from_counts,
    bucket_assignment_problems,
    solve_bucket_assignment,
)
from republish.problems.buckets import BucketCounts, m_unique_feasible, plan_m_unique_groups

VALUES = ("a", "b", "c", "d")


@cache
def _splittable(state: tuple[tuple[int, int], ...], m: int) -> bool:
    """Exhaustive search: do (real, counterfeit) counts per value split into m-unique
    groups each holding a real row?"""
    if all(r == 0 and e == 0 for r, e in state):
        return True
    first = next(i for i, (r, e) in enumerate(state) if r + e)
    # 0: value absent from the group, 1: a real row, 2: a counterfeit.
    for choice in itertools.product((0, 1, 2), repeat=len(state)):
        if choice[first] == 0 or 1 not in choice or sum(c > 0 for c in choice) < m:
            continue
        if any((c == 1 and r == 0) or (c == 2 and e == 0)
               for c, (r, e) in zip(choice, state, strict=True)):
            continue
        rest = tuple((r - (c == 1), e - (c == 2)) for c, (r, e) in zip(choice, state, strict=True))
        if _splittable(rest, m):
            return True
    return False


def _check_plan(real: dict[str, int], fake: dict[str, int], m: int) -> None:
    groups = plan_m_unique_groups(real, fake, m)
    seen_real: dict[str, int] = {}
    seen_fake: dict[str, int] = {}
    for group in groups:
        assert len(group) >= m
        assert any(group.values()), "a group of counterfeits only"
        for v, is_real in group.items():
            target = seen_real if is_real else seen_fake
            target[v] = target.get(v, 0) + 1
    assert seen_real == {v: c for v, c in real.items() if c}
    assert seen_fake == {v: c for v, c in fake.items() if c}


@pytest.mark.parametrize("m", [2, 3])
def test_lemma_matches_exhaustive_search(m: int) -> None:
    checked = 0
    for real in itertools.product(range(3), repeat=4):
        for fake in itertools.product(range(3), repeat=4):
            state = tuple(zip(real, fake, strict=True))
            r = dict(zip(VALUES, real, strict=False))
            e = dict(zip(VALUES, fake, strict=False))
            expected = _splittable(state, m)
            assert m_unique_feasible(r, e, m) == expected, (real, fake)
            if expected:
                _check_plan(r, e, m)
                checked += 1
            else:
                with pytest.raises(InputError):
                    plan_m_unique_groups(r, e, m)
    assert checked > 300


@settings(max_examples=300, deadline=None)
@given(
    m=st.integers(2, 5),
    real=st.lists(st.integers(0, 12), min_size=1, max_size=8),
    fake=st.lists(st.integers(0, 6), min_size=1, max_size=8),
)
def test_plan_builds_groups_whenever_the_lemma_allows(
    m: int, real: list[int], fake: list[int]
) -> None:
    names = [f"v{i}" for i in range(max(len(real), len(fake)))]
    r = {v: c for v, c in zip(names, real, strict=False)}
    e = {v: c for v, c in zip(names, fake, strict=False)}
    if m_unique_feasible(r, e, m):
        _check_plan(r, e, m)


# --- brute force over the count decisions -------------------------------------------------


def _leftover_cost(
    published: tuple[int, ...], m: int, present_only: bool
) -> int | None:
    """Fewest eligibility counterfeits making the published leftover splittable."""
    if not any(published):
        return 0
    allowed = [i for i, p in enumerate(published) if p > 0 or not present_only]
    for total in range(0, 4 * sum(published) + 1):
        for split in itertools.combinations_with_replacement(allowed, total):
            fake = [0] * len(published)
            for i in split:
                fake[i] += 1
            if _splittable(tuple(zip(published, fake, strict=True)), m):
                return total
    return None


def brute_force(
    buckets: list[BucketCounts],
    new: dict[str, int],
    m: int,
    allow_deferrals: bool,
    weight: float,
    new_values: bool = False,
) -> float:
    values = sorted(set(new) | {v for b in buckets for v in b.signature})
    index = {v: i for i, v in enumerate(values)}
    per_bucket = []
    for bucket in buckets:
        options = []
        for x in itertools.product(*(range(new.get(v, 0) + 1) for v in bucket.signature)):
            k = max(bucket.count(v) + xv for v, xv in zip(bucket.signature, x, strict=True))
            real = tuple(bucket.count(v) + xv for v, xv in zip(bucket.signature, x, strict=True))
            state = tuple((r, k - r) for r in real)
            if _splittable(state, len(bucket.signature)):
                options.append((x, sum(k - r for r in real)))
        per_bucket.append(options)
    best = math.inf
    for combo in itertools.product(*per_bucket):
        left = [new.get(v, 0) for v in values]
        cost = 0.0
        for bucket, (x, fakes) in zip(buckets, combo, strict=True):
            cost += fakes
            for v, xv in zip(bucket.signature, x, strict=True):
                left[index[v]] -= xv
        if min(left, default=0) < 0 or cost >= best:
            continue
        ranges = [range(c + 1) if allow_deferrals else range(1) for c in left]
        for deferred in itertools.product(*ranges):
            published = tuple(c - d for c, d in zip(left, deferred, strict=True))
            extra = _leftover_cost(published, m, present_only=not new_values)
            if extra is not None:
                best = min(best, cost + extra + weight * sum(deferred))
    return best


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[BucketCounts], dict[str, int], int]:
    m = draw(st.integers(2, 3))
    buckets = []
    for _ in range(draw(st.integers(0, 3))):
        size = draw(st.integers(m, min(m + 1, len(VALUES))))
        signature = tuple(draw(st.permutations(VALUES))[:size])
        counts = {v: draw(st.integers(0, 2)) for v in signature}
        if sum(counts.values()) == 0:
            counts[signature[0]] = 1
        buckets.append(BucketCounts(signature, counts))
    budget = draw(st.integers(0, 8))
    new: dict[str, int] = {}
    for _ in range(budget):
        v = draw(st.sampled_from(VALUES))
        new[v] = new.get(v, 0) + 1
    return buckets, new, m


@settings(max_examples=50, deadline=None)
@given(instance=instances(), allow_deferrals=st.booleans(),
       weight=st.sampled_from([0.5, 1.0, 2.0]), engine=st.sampled_from(["mip", "cp-sat"]))
def test_model_equals_brute_force(
    instance: tuple[list[BucketCounts], dict[str, int], int], allow_deferrals: bool,
    weight: float, engine: str,
) -> None:
    buckets, new, m = instance
    expected = brute_force(buckets, new, m, allow_deferrals, weight)
    result = solve_bucket_assignment(
        buckets, new, m, allow_deferrals=allow_deferrals, deferral_weight=weight,
        time_limit=10.0, num_workers=1, engine=engine,  # type: ignore[arg-type]
    )
    if math.isinf(expected):
        assert result.status == "INFEASIBLE"
        assert not result.feasible
        return
    assert result.status == "OPTIMAL"
    assert result.objective == pytest.approx(expected)
    assert result.bound == pytest.approx(expected)
    assert bucket_assignment_problems(buckets, new, m, result, allow_deferrals) == []


def test_new_values_allow_publishing_a_single_value_leftover() -> None:
    buckets = [BucketCounts(("a", "b"), {"a": 1, "b": 1})]
    new = {"c": 3}
    strict = solve_bucket_assignment(buckets, new, 2)
    assert strict.status == "INFEASIBLE"
    wide = solve_bucket_assignment(buckets, new, 2, allow_new_values=True, new_values=["a", "d"])
    assert wide.status == "OPTIMAL"
    # Three groups (c, counterfeit); brute force agrees.
    assert wide.objective == 3 == brute_force(buckets, new, 2, False, 1.0, new_values=True)
    assert bucket_assignment_problems(buckets, new, 2, wide, allow_new_values=True,
                                      new_values=["a", "d"]) == []
    deferring = solve_bucket_assignment(buckets, new, 2, allow_deferrals=True,
                                        deferral_weight=0.4)
    assert deferring.deferrals == {"c": 3}
    assert deferring.objective == pytest.approx(1.2)


def test_extra_rows_publish_a_leftover_that_eligibility_cannot() -> None:
    # Alone, {a: 2} is never 2-eligible with counterfeits of present values only; two whole
    # extra rows (a, counterfeit b) in the bucket publish it for 2 counterfeits.
    buckets = [BucketCounts(("a", "b"), {"a": 1, "b": 1})]
    new = {"a": 2}
    result = solve_bucket_assignment(buckets, new, 2)
    assert result.status == "OPTIMAL"
    assert result.objective == 2 == brute_force(buckets, new, 2, False, 1.0)
    assert result.targets == (3,)
    assert result.from_new == ({"a": 2},)
    assert result.counterfeits == ({"b": 2},)


def _greedy(buckets: list[BucketCounts], new: dict[str, int], m: int) -> BucketAssignment:
    """The paper's order: deficits from new rows, leftover made eligible (Algorithm 1)."""
    from republish.heuristics.balancing import balance_buckets

    balancing = balance_buckets([b.counts for b in buckets], new)
    left = dict(balancing.remaining)
    total = sum(left.values())
    extra: dict[str, int] = {}
    if total:
        largest = max(left.values())
        need = max(0, m * largest - total)
        pool = sorted(left, key=lambda v: left[v])
        for _ in range(need):  # water-filling: always the least frequent value
            v = min(pool, key=lambda u: (left[u] + extra.get(u, 0), u))
            extra[v] = extra.get(v, 0) + 1
    return bucket_assignment_from_counts(
        buckets, new, m, balancing.targets, balancing.from_new, extra, {}
    )


@settings(max_examples=25, deadline=None)
@given(instance=instances())
def test_exact_never_worse_than_its_warm_start(
    instance: tuple[list[BucketCounts], dict[str, int], int],
) -> None:
    buckets, new, m = instance
    hint = _greedy(buckets, new, m)
    if bucket_assignment_problems(buckets, new, m, hint):
        return  # the greedy found nothing publishable (e.g. fewer than m leftover values)
    result = solve_bucket_assignment(buckets, new, m, hint=hint, time_limit=10.0)
    assert result.feasible
    assert result.objective <= hint.objective
    assert result.certificate.heuristic_objective == hint.objective


def test_bad_parameters_are_rejected() -> None:
    bucket = BucketCounts(("a", "b"), {"a": 1})
    with pytest.raises(ParameterError):
        solve_bucket_assignment([bucket], {}, 1)
    with pytest.raises(ParameterError):
        solve_bucket_assignment([bucket], {}, 2, deferral_weight=-1.0)
    with pytest.raises(InputError):
        solve_bucket_assignment([bucket], {"a": -1}, 2)
    with pytest.raises(InputError):
        solve_bucket_assignment([bucket], {}, 3)  # signature smaller than m
    with pytest.raises(InputError):
        BucketCounts(("a", "b"), {"c": 1})
    with pytest.raises(InputError):
        BucketCounts(("a", "a"), {})


@settings(max_examples=60, deadline=None)
@given(instance=instances(), allow_deferrals=st.booleans(),
       weight=st.sampled_from([0.5, 1.0, 2.0]))
def test_forced_counterfeits_bound_every_release(
    instance: tuple[list[BucketCounts], dict[str, int], int], allow_deferrals: bool,
    weight: float,
) -> None:
    # the floor that certifies (a) when the counts model has not proven it: never above
    # the brute-force optimum, and exactly balancing's counterfeits
    buckets, new, m = instance
    counts = [{v: bucket.count(v) for v in bucket.signature} for bucket in buckets]
    forced = forced_counterfeits(counts, new)
    assert forced <= brute_force(buckets, new, m, allow_deferrals, weight)
    balancing = balance_buckets(counts, new) if counts else None
    assert forced == (0 if balancing is None else
                      sum(sum(c.values()) for c in balancing.counterfeits))
