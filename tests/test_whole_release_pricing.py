"""Anchor pricing of the whole-release model (models/whole_release_pricing.py) against a
brute-force enumeration of every column of a family."""

from __future__ import annotations

import dataclasses
import itertools
import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from republish.models import whole_release_pricing as pricing_module
from republish.models.whole_release import WholeReleaseProblem
from republish.models.whole_release_counts import (
    Family,
    ReleaseCounts,
    families,
)
from republish.models.whole_release_enumeration import enumerate_columns
from republish.models.whole_release_pricing import nearest_columns, price_by_anchors


def all_columns(problem: WholeReleaseProblem, family: Family) -> list[tuple[int, ...]]:
    """Every column of ``family``: one row of at most one pool each, lo..hi rows."""
    found = []
    pools = [p.tolist() for p in family.pools]
    for size in range(max(family.lo, 1), family.hi + 1):
        for chosen_pools in itertools.combinations(range(len(pools)), size):
            for rows in itertools.product(*(pools[p] for p in chosen_pools)):
                if family.need_old and not (problem.bucket[list(rows)] >= 0).any():
                    continue
                found.append(tuple(sorted(rows)))
    return found


def estimate(problem: WholeReleaseProblem, family: Family, rows: tuple[int, ...],
             pi: np.ndarray) -> float:
    """``|σ|·extent - Σ pi``, the quantity the pricer tests (the extent: the problem's
    ``box_lengths`` of the rows' box, else its widths)."""
    points = problem.points[list(rows)]
    sigma = family.signature or max(problem.m, len(rows))
    low, high = points.min(axis=0), points.max(axis=0)
    extent = (high - low).sum() if problem.box_lengths is None else \
        problem.box_lengths(low, high).sum()
    return float(sigma * extent - pi[list(rows)].sum())


def least_per_anchor(problem: WholeReleaseProblem, family: Family, pi: np.ndarray
                     ) -> tuple[dict[int, int], dict[int, float]]:
    """Brute force: each row's rank (anchors by price, then index) and each anchor's least
    tested quantity over every column anchored at it."""
    order = sorted(range(len(pi)), key=lambda i: (-pi[i], i))
    rank = {row: position for position, row in enumerate(order)}
    per_anchor: dict[int, float] = {}
    for column in all_columns(problem, family):
        anchor = min(column, key=lambda i: rank[i])
        per_anchor[anchor] = min(per_anchor.get(anchor, math.inf),
                                 estimate(problem, family, column, pi))
    return rank, per_anchor


def tree_lengths(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The first coordinate (codes 0..6 over 6) measured by a two-level tree: cells 0-2 and
    3-6 under a root; at least the width and monotone under inclusion, as a hierarchy."""
    lengths = np.array(high, dtype=np.float64) - np.asarray(low, dtype=np.float64)
    lo, hi = np.rint(np.asarray(low)[..., 0] * 6), np.rint(np.asarray(high)[..., 0] * 6)
    same = ((hi <= 2) | (lo >= 3))
    lengths[..., 0] = np.where(lo == hi, 0.0, np.where(same, np.where(hi <= 2, 2 / 6, 3 / 6),
                                                        1.0))
    return lengths


@st.composite
def priced_families(draw: st.DrawFn) -> tuple[WholeReleaseProblem, Family, np.ndarray, float]:
    m = draw(st.integers(2, 3))
    domain = m + draw(st.integers(0, 2))
    n_new = draw(st.integers(2, 8))
    old_groups = draw(st.integers(0, 2))
    values = [draw(st.integers(0, domain - 1)) for _ in range(n_new)]
    bucket = [-1] * n_new
    signature = frozenset(range(m))
    for _ in range(old_groups):
        values += list(range(m))
        bucket += [0] * m
    n = len(values)
    points = np.array([[draw(st.integers(0, 6)) / 6 for _ in range(2)] for _ in range(n)])
    problem = WholeReleaseProblem(points, np.array(values), np.array(bucket),
                                  (signature,) if old_groups else (), m, domain)
    fams = families(problem, ReleaseCounts.of(problem), draw(st.integers(0, 2)))
    family = fams[draw(st.integers(0, len(fams) - 1))]
    pi = np.array([draw(st.integers(-4, 12)) / 4 for _ in range(n)])
    theta = draw(st.sampled_from([0.0, 0.5, 2.0]))
    if draw(st.booleans()):  # a pricing problem whose first QI is a hierarchy
        problem = dataclasses.replace(problem, box_lengths=tree_lengths)
    return problem, family, pi, theta


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(priced_families())
def test_exact_mode_finds_every_column_under_theta(case: tuple) -> None:
    problem, family, pi, theta = case
    expected = {c for c in all_columns(problem, family)
                if estimate(problem, family, c, pi) <= theta + 1e-9}
    result = price_by_anchors(problem, family, pi, theta, limit=10**6)
    assert result is not None
    found = [tuple(int(i) for i in row if i >= 0) for row in result[0]]
    assert len(found) == len(set(found))  # each column once, at its anchor
    assert set(found) == expected


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(priced_families())
def test_best_mode_gives_each_anchors_least_reduced_cost(case: tuple) -> None:
    """With rc = the tested quantity, each anchor's least reduced cost is exact (or a valid
    lower bound when nothing negative exists), and its columns attain it."""
    problem, family, pi, _ = case

    def rc_of(block: np.ndarray) -> np.ndarray:
        return np.array([estimate(problem, family, tuple(int(i) for i in row if i >= 0), pi)
                         for row in block])

    result = price_by_anchors(problem, family, pi, 0.0, limit=10**6, rc_of=rc_of)
    assert result is not None
    columns, least = result
    _, per_anchor = least_per_anchor(problem, family, pi)
    for anchor, best in per_anchor.items():
        if best < -1e-9:
            assert least[anchor] == best or abs(least[anchor] - best) < 1e-9
        else:
            assert min(least[anchor], 0.0) <= best + 1e-9  # a valid bound, never above
    if len(columns):
        assert (rc_of(columns) <= 1e-9).all()
    # the bound of a partition: disjoint columns have distinct anchors
    assert float(np.minimum(least, 0).sum()) <= sum(min(b, 0) for b in per_anchor.values()
                                                    ) + 1e-9


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(priced_families(), st.integers(1, 4))
def test_refined_anchor_bounds_stay_valid_and_never_fall(case: tuple, limit: int) -> None:
    """With a tiny enumeration limit per anchor, most anchors end on a bound, not their
    columns: the refined search (bisecting up from the proven floor) still never exceeds
    any anchor's least reduced cost, is never below the unrefined one, and where it
    returns columns their least reduced cost is the anchor's."""
    problem, family, pi, _ = case

    def rc_of(block: np.ndarray) -> np.ndarray:
        return np.array([estimate(problem, family, tuple(int(i) for i in row if i >= 0), pi)
                         for row in block])

    with mock.patch.object(pricing_module, "ANCHOR_LIMIT", limit):
        plain = price_by_anchors(problem, family, pi, 0.0, limit=10**6, rc_of=rc_of)
        refined = price_by_anchors(problem, family, pi, 0.0, limit=10**6, rc_of=rc_of,
                                   refine=True)
    assert plain is not None and refined is not None
    rank, per_anchor = least_per_anchor(problem, family, pi)
    for anchor, best in per_anchor.items():
        assert min(refined[1][anchor], 0.0) <= best + 1e-9
        assert min(refined[1][anchor], 0.0) >= min(plain[1][anchor], 0.0) - 1e-9
    returned: dict[int, float] = {}
    for row in refined[0]:
        rows = tuple(int(i) for i in row if i >= 0)
        anchor = min(rows, key=lambda i: rank[i])
        returned[anchor] = min(returned.get(anchor, math.inf), estimate(problem, family, rows,
                                                                        pi))
    for anchor, best in returned.items():
        assert best == pytest.approx(per_anchor[anchor])
        assert refined[1][anchor] == pytest.approx(best)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(priced_families())
def test_tight_pruning_drops_no_column_under_theta(case: tuple) -> None:
    """The tight completion bound (each later row charged for the extent it adds) prunes
    only partial columns that cannot pass: the same columns as the loose bound, and every
    column under theta (brute force) among them."""
    problem, family, pi, theta = case
    loose = enumerate_columns(problem, family, limit=10**6, pi=pi, theta=theta,
                              first_forced=True)
    tight = enumerate_columns(problem, family, limit=10**6, pi=pi, theta=theta,
                              first_forced=True, tight=True)
    assert loose is not None and tight is not None
    as_set = [{tuple(int(i) for i in row if i >= 0) for row in block} for block in (loose, tight)]
    assert as_set[0] == as_set[1]
    first = next(set(p.tolist()) for p in family.pools if len(p))  # the forced pool
    expected = {c for c in all_columns(problem, family)
                if estimate(problem, family, c, pi) <= theta + 1e-9 and first & set(c)}
    assert expected <= as_set[1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(priced_families(), st.integers(1, 5), st.booleans())
def test_enumeration_in_blocks_finds_the_same_columns(case: tuple, block: int,
                                                      tight: bool) -> None:
    """Forming the candidates a few at a time (so that the deadline is looked at between
    blocks) gives the same columns, in the same order, as one block per pool."""
    from republish.models import whole_release_enumeration as enumeration_module
    problem, family, pi, theta = case
    whole = enumerate_columns(problem, family, limit=10**6, pi=pi, theta=theta,
                              first_forced=True, tight=tight)
    with mock.patch.object(enumeration_module, "ENUMERATION_BLOCK", block):
        blocked = enumerate_columns(problem, family, limit=10**6, pi=pi, theta=theta,
                                    first_forced=True, tight=tight)
    assert whole is not None and blocked is not None
    assert np.array_equal(whole, blocked)


def test_enumeration_stops_within_a_pool_at_its_deadline() -> None:
    """One pool's candidates in many blocks: a deadline passed during the pool stops the
    enumeration there (None), where one block per pool would have finished the step."""
    from republish.models import whole_release_enumeration as enumeration_module
    rng = np.random.default_rng(3)
    problem = WholeReleaseProblem(rng.random((60, 2)), rng.integers(0, 3, 60), np.full(60, -1),
                                  (), 3, 3)
    family = families(problem, ReleaseCounts.of(problem), 0)[0]
    ticks = iter(range(10**6))

    def clock() -> float:  # every look at the clock takes a second
        return float(next(ticks))

    with mock.patch.object(enumeration_module.time, "perf_counter", clock), \
            mock.patch.object(enumeration_module, "ENUMERATION_BLOCK", 1):
        assert enumerate_columns(problem, family, limit=10**6, deadline=3.0) is None
    ticks = iter(range(10**6))
    with mock.patch.object(enumeration_module.time, "perf_counter", clock):
        # one block per pool: three pools, a look before each and one per block
        assert enumerate_columns(problem, family, limit=10**6, deadline=8.0) is not None


def test_tight_gain_past_its_deadline_claims_nothing() -> None:
    """Past its deadline the tight completion bound returns inf (no tightening, the loose
    bound stands), before it a finite bound no larger than the loose one."""
    from republish.models.whole_release_enumeration import _tight_gain
    rng = np.random.default_rng(7)
    problem = WholeReleaseProblem(rng.random((40, 2)), rng.integers(0, 4, 40), np.full(40, -1),
                                  (), 3, 4)
    family = families(problem, ReleaseCounts.of(problem), 0)[0]
    pi = rng.random(40)
    later = [p for p in family.pools[1:] if len(p)]
    partial = family.pools[0][:3]
    low, high = problem.points[partial], problem.points[partial]
    args = (problem, family, later, pi, low, high, np.zeros(3), np.ones(3, np.int64))
    on_time = _tight_gain(*args)
    assert np.isfinite(on_time).all()
    loose = np.sort(np.concatenate([[pi[p].max()] for p in later]))[::-1][:family.hi - 1].sum()
    assert (on_time <= loose + 1e-9).all()
    assert np.isposinf(_tight_gain(*args, deadline=0.0)).all()


def test_nearest_columns_cover_every_row_with_a_valid_column() -> None:
    rng = np.random.default_rng(4)
    problem = WholeReleaseProblem(rng.random((30, 3)), rng.integers(0, 5, 30), np.full(30, -1),
                                  (), 3, 5)
    family = families(problem, ReleaseCounts.of(problem), 0)[0]
    block = nearest_columns(problem, family)
    covered = set(block[block >= 0].tolist())
    assert covered == set(range(30))
    for row in block:
        rows = row[row >= 0]
        assert family.lo <= len(rows) <= family.hi
        assert len(set(problem.values[rows].tolist())) == len(rows)


def test_incremental_master_matches_a_fresh_lp() -> None:
    """The master kept between rounds gives the bound of an LP built from scratch."""
    from republish.models.whole_release_bound import Master, relax
    from republish.models.whole_release_master import IncrementalMaster

    rng = np.random.default_rng(7)
    n = 12
    columns = [np.sort(rng.choice(n, size=int(rng.integers(1, 4)), replace=False))
               for _ in range(60)]
    columns += [np.array([i]) for i in range(n)]  # always feasible
    members = np.full((len(columns), 3), -1)
    for c, rows in enumerate(columns):
        members[c, :len(rows)] = rows
    cost = rng.random(len(columns)) * 3
    exact = rng.random(n) < 0.7

    def master(count: int) -> Master:
        return Master(members[:count], cost[:count], np.zeros(count, np.int64), 0, exact,
                      np.zeros(n), np.full(n, np.inf))

    incremental = IncrementalMaster(master(n))  # a prefix, then grown twice
    for count in (n, 40, len(columns)):
        ours = incremental.relax(master(count), 10.0)
        fresh = relax(master(count), 10.0)
        if fresh is None:
            assert ours is None
            continue
        assert ours is not None
        assert ours.bound == pytest.approx(fresh.bound, abs=1e-7)
        value = float(master(count).cost @ ours.x)
        assert value == pytest.approx(float(master(count).cost @ fresh.x), abs=1e-7)
