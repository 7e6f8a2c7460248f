"""Issue 17: the §4.3 split of a bucket depends on its own rows only, bucket tasks give
one split's groups, and the vectorized release helpers equal their plain definitions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from republish.heuristics.perimeter_split import qi_ranks, split_buckets_min_perimeter
from republish.release import _renumber, build_release
from republish.schema import QIAttribute, Schema
from republish.solver.bucket_tasks import canonical_groups, plan_tasks, split_in_tasks
from republish.state import PublisherState, SignatureColumn, group_signatures


def _partition(groups: np.ndarray) -> set[frozenset[int]]:
    found: dict[int, set[int]] = {}
    for item, group in enumerate(groups.tolist()):
        found.setdefault(group, set()).add(item)
    return {frozenset(items) for items in found.values()}


def _buckets(seed: int, count: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Balanced buckets of census-like discrete points (many equal values), counterfeits
    as NaN rows, rows of all buckets shuffled together."""
    rng = np.random.default_rng(seed)
    points, values, buckets = [], [], []
    for bucket in range(count):
        s, k = int(rng.integers(2, 7)), int(rng.integers(1, 120))
        n = s * k
        p = np.column_stack([rng.integers(0, 79, n) / 78, rng.integers(0, 2, n) / 1.0,
                             rng.integers(0, 17, n) / 16, rng.integers(0, 57, n) / 56])
        p[rng.random(n) < 0.04] = np.nan
        points.append(p)
        values.append(np.repeat(rng.choice(50, s, replace=False), k))
        buckets.append(np.full(n, bucket))
    order = rng.permutation(sum(len(v) for v in values))
    return (np.concatenate(points)[order], np.concatenate(values)[order],
            np.concatenate(buckets)[order])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_bucket_splits_the_same_alone_and_among_others(seed: int) -> None:
    points, values, buckets = _buckets(seed)
    together = split_buckets_min_perimeter(points, values, buckets).groups
    rank = qi_ranks(points)
    for bucket in np.unique(buckets).tolist():
        rows = np.flatnonzero(buckets == bucket)
        alone = split_buckets_min_perimeter(points[rows], values[rows], buckets[rows],
                                            rank[:, rows]).groups
        assert _partition(alone) == _partition(together[rows])
        # every group holds one row per value of the bucket
        for group in np.unique(alone).tolist():
            assert sorted(values[rows][alone == group].tolist()) == sorted(
                set(values[rows].tolist()))


@pytest.mark.parametrize("tasks", [1, 2, 5, 50])
def test_tasks_in_this_process_equal_one_split(tasks: int) -> None:
    points, values, buckets = _buckets(4)
    one = canonical_groups(split_buckets_min_perimeter(points, values, buckets).groups)
    result = split_in_tasks(points, values, buckets, scheduler="local", tasks=tasks)
    assert np.array_equal(result.groups, one)
    assert result.group_count == len(np.unique(one))


def test_plan_keeps_buckets_whole_and_balances() -> None:
    buckets = np.repeat(np.arange(6), [50, 40, 30, 20, 10, 10])
    plan = plan_tasks(buckets, 3)
    assert sorted(np.concatenate(plan.parts).tolist()) == list(range(len(buckets)))
    for part in plan.parts:
        for bucket in np.unique(buckets[part]).tolist():
            assert (buckets[part] == bucket).sum() == (buckets == bucket).sum()
    assert max(plan.sizes) - min(plan.sizes) <= 20


def test_renumbering_is_the_same_for_integer_and_other_labels() -> None:
    labels = np.array([7, 3, 7, 9, 3, 1, 9, 9])
    fast, fast_rows = _renumber(labels, np.random.default_rng(3))
    plain, plain_rows = _renumber([f"g{v}" for v in labels.tolist()], np.random.default_rng(3))
    assert np.array_equal(fast_rows, plain_rows)
    assert fast == {int(k[1:]): v for k, v in plain.items()}


def test_group_signatures_equal_their_definition() -> None:
    schema = Schema(identifier="id", sensitive="sa", qis=(QIAttribute("age", "numeric"),))
    rng = np.random.default_rng(5)
    n = 400
    values = [f"v{i}" for i in range(70)]  # more than 64 values: two mask words
    table = pd.DataFrame({"id": [str(i) for i in range(n)],
                          "age": rng.integers(20, 60, n).astype(float),
                          "sa": rng.choice(values, n)})
    groups = rng.integers(0, 60, n)
    release = build_release(1, table, groups, schema, rng=rng)
    expected = {g: frozenset(v) for g, v in
                release.published.groupby("group", sort=False)["sa"]}
    assert group_signatures(release) == expected


def test_advance_takes_signature_codes_as_it_takes_a_list() -> None:
    schema = Schema(identifier="id", sensitive="sa", qis=(QIAttribute("age", "numeric"),))
    rng = np.random.default_rng(6)
    n = 300
    table = pd.DataFrame({"id": [str(i) for i in range(n)],
                          "age": rng.integers(20, 60, n).astype(float),
                          "sa": rng.choice([f"v{i}" for i in range(9)], n)})
    release = build_release(1, table, rng.integers(0, 40, n), schema, rng=rng)
    by_group = group_signatures(release)
    table_of = list(dict.fromkeys(by_group.values()))[::-1]
    codes = np.array([table_of.index(by_group[g]) for g in release.assignment["group"]])
    empty = PublisherState.empty(schema, 2)
    plain = empty.advance(release, [table_of[c] for c in codes.tolist()])
    fast = empty.advance(release, SignatureColumn(codes, table_of))
    pd.testing.assert_frame_equal(plain.rows, fast.rows)
    assert plain.signatures == fast.signatures
