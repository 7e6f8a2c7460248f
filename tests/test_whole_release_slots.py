"""Slot trades (models/whole_release_slots.py): valid, every group keeps its signature and
counterfeits (so the next release's buckets keep their sizes), (b) never worse, each
assignment exact, and a local optimum for single-value trades at the end."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from republish.models.whole_release import WholeReleaseProblem, group_signature, release_problems
from republish.models.whole_release_counts import BoxExtent
from republish.models.whole_release_slots import _SCALE, _assign, trade_slots


def random_release(seed: int, m: int, counterfeits_in_new_groups: bool = True
                   ) -> tuple[WholeReleaseProblem, list[np.ndarray]]:
    """Buckets whose groups hold an old row, other old or new rows and counterfeits, plus
    all-new groups of m distinct values; random points, so the grouping is poor."""
    rng = np.random.default_rng(seed)
    domain = m + 3
    signatures: list[frozenset[int]] = []
    values: list[int] = []
    bucket: list[int] = []
    groups: list[list[int]] = []
    for b in range(int(rng.integers(1, 3))):
        sigma = sorted(rng.choice(domain, size=m + int(rng.integers(0, 2)), replace=False))
        signatures.append(frozenset(int(v) for v in sigma))
        for _ in range(int(rng.integers(2, 5))):
            group: list[int] = []
            for position, v in enumerate(sigma):
                if position and rng.random() < 0.2:
                    continue  # a counterfeit
                values.append(int(v))
                bucket.append(b if position == 0 or rng.random() < 0.6 else -1)
                group.append(len(values) - 1)
            groups.append(group)
    for _ in range(int(rng.integers(0, 4))):
        group = []
        for v in rng.choice(domain, size=m, replace=False).tolist():
            values.append(int(v))
            bucket.append(-1)
            group.append(len(values) - 1)
        groups.append(group)
    problem = WholeReleaseProblem(rng.random((len(values), 2)), np.array(values),
                                  np.array(bucket), tuple(signatures), m, domain,
                                  counterfeits_in_new_groups=counterfeits_in_new_groups)
    return problem, [np.array(g, dtype=np.int64) for g in groups]


def cost(problem: WholeReleaseProblem, groups: list[np.ndarray]) -> tuple[int, float]:
    sigmas = [group_signature(problem, g) for g in groups]
    return (sum(len(s) - len(g) for s, g in zip(sigmas, groups, strict=True)),
            sum(len(s) * float(np.ptp(problem.points[g], axis=0).sum())
                for s, g in zip(sigmas, groups, strict=True)))


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3), new_counterfeits=st.booleans())
def test_trades_keep_release_valid_signatures_counterfeits_and_never_worsen(
        seed: int, m: int, new_counterfeits: bool) -> None:
    problem, start = random_release(seed, m, new_counterfeits)
    assert release_problems(problem, start, np.zeros(0, np.int64)) == []
    found = trade_slots(problem, start, deadline=time.perf_counter() + 5.0, seed=seed,
                        groups_per_move=3, patience=40)
    groups = list(found.groups)
    assert release_problems(problem, groups, np.zeros(0, np.int64)) == []
    assert [group_signature(problem, g) for g in groups] == \
        [group_signature(problem, g) for g in start]
    assert [sorted(problem.values[g].tolist()) for g in groups] == \
        [sorted(problem.values[g].tolist()) for g in start]  # the same real slots
    for g in groups:  # an old row stays in a group of its own bucket's signature
        for i in g[problem.bucket[g] >= 0].tolist():
            assert group_signature(problem, g) == problem.signatures[problem.bucket[i]]
    before, after = cost(problem, start), cost(problem, groups)
    assert after[0] == before[0]
    assert after[1] <= before[1] + 1e-9
    assert abs((before[1] - after[1]) - found.gain) < 1e-6


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3))
@example(seed=896268, m=2)  # a new row into a lone old row's slot, σ kept (session 7)
@example(seed=944, m=3)  # a swap gains 0.00046, below the assignment's rounding
def test_the_end_is_a_local_optimum_for_swaps_of_one_value(seed: int, m: int) -> None:
    """With every holder in each assignment and a long patience, no swap of two rows of
    one value between two groups lowers (b) any more (when the swap is allowed) than the
    assignment's cost rounding hides (seed 944, m = 3: a swap gains 0.00046)."""
    problem, start = random_release(seed, m)
    found = trade_slots(problem, start, deadline=time.perf_counter() + 5.0, seed=seed,
                        groups_per_move=len(start) if len(start) >= 2 else 2, patience=200)
    assert_no_improving_swap(problem, list(found.groups), lambda g: cost(problem, g)[1])


#: What a swap may gain unseen by the trades' assignments, whose costs are rounded to
#: 1 / _SCALE: the two entries it changes and the two it replaces, each off by at most half
#: a unit.
ROUNDING = 2.0 / _SCALE


def assert_no_improving_swap(problem: WholeReleaseProblem, groups: list[np.ndarray],
                             objective_b: Callable[[list[np.ndarray]], float]) -> None:
    """No allowed swap of two rows of one value between two groups (the release stays
    valid, every group keeps its signature) lowers ``objective_b`` by more than
    ROUNDING."""
    groups = [g.copy() for g in groups]
    best = objective_b(groups)
    for a, b in itertools.combinations(range(len(groups)), 2):
        for i in groups[a].tolist():
            for j in groups[b].tolist():
                if problem.values[i] != problem.values[j]:
                    continue
                trial = [g.copy() for g in groups]
                trial[a] = np.where(trial[a] == i, j, trial[a])
                trial[b] = np.where(trial[b] == j, i, trial[b])
                if release_problems(problem, trial, np.zeros(0, np.int64)) or [
                        group_signature(problem, g) for g in trial] != [
                        group_signature(problem, g) for g in groups]:
                    continue
                assert objective_b(trial) >= best - ROUNDING - 1e-9


@settings(max_examples=80, deadline=None)
@given(k=st.integers(1, 5), seed=st.integers(0, 10**6))
def test_assignment_is_the_brute_force_optimum(k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    placed = rng.random((k, k)).round(3)
    allowed = rng.random((k, k)) < 0.6
    np.fill_diagonal(allowed, True)
    order = _assign(placed, allowed)  # group b receives row order[b]
    assert sorted(order.tolist()) == list(range(k))
    assert allowed[order, np.arange(k)].all()
    best = min(sum(placed[p[b], b] for b in range(k))
               for p in itertools.permutations(range(k))
               if all(allowed[p[b], b] for b in range(k)))
    assert abs(placed[order, np.arange(k)].sum() - best) < 1e-6


def test_joined_is_the_extent_of_the_union() -> None:
    rng = np.random.default_rng(3)
    points = rng.random((12, 3))
    extent = BoxExtent(points)
    members = np.array([[0, 1, -1], [2, -1, -1], [3, 4, 5]])
    rows = np.array([6, 7])
    matrix = extent.joined(members, rows)
    for a, row in enumerate(rows.tolist()):
        for b, member in enumerate(members):
            assert abs(matrix[a, b] - extent(np.append(member[member >= 0], row))) < 1e-12


def test_a_random_first_release_improves_by_a_fifth() -> None:
    rng = np.random.default_rng(0)
    n = 300
    values = np.tile(np.arange(3), n // 3)
    grid = WholeReleaseProblem(rng.random((n, 2)), values, np.full(n, -1), (), 3, 3)
    by_value = [rng.permutation(np.flatnonzero(values == v)) for v in range(3)]
    start_groups = [np.array([by_value[v][j] for v in range(3)]) for j in range(n // 3)]
    found = trade_slots(grid, start_groups, deadline=time.perf_counter() + 2.0, seed=1)
    assert found.improved > 0
    assert cost(grid, list(found.groups))[1] < 0.8 * cost(grid, start_groups)[1]
