"""Large-neighbourhood search on releases too large for the whole-release model
(models/whole_release_neighbourhoods.py): valid, never worse, and better than a poor start."""

from __future__ import annotations

import time

import numpy as np
import pytest

from republish.models import whole_release
from republish.models.whole_release import (
    WholeReleaseProblem,
    group_signature,
    release_problems,
    solve_whole_release,
)
from republish.models.whole_release_neighbourhoods import improve_by_neighbourhoods


def costs(problem: WholeReleaseProblem, groups: list[np.ndarray]) -> tuple[int, float]:
    sigmas = [group_signature(problem, g) for g in groups]
    points = problem.points
    return (sum(len(s) - len(g) for s, g in zip(sigmas, groups, strict=True)),
            sum(len(s) * float(np.ptp(points[g], axis=0).sum())
                for s, g in zip(sigmas, groups, strict=True)))


def scattered_release(problem: WholeReleaseProblem, seed: int) -> list[np.ndarray]:
    """Old rows of each bucket in groups of one per value, new rows round robin by value:
    valid, and far from optimal (rows are grouped in random order)."""
    rng = np.random.default_rng(seed)
    groups: list[np.ndarray] = []
    for b in range(len(problem.signatures)):
        rows = np.flatnonzero(problem.bucket == b)
        per_value = [rng.permutation(rows[problem.values[rows] == v])
                     for v in sorted(problem.signatures[b])]
        groups += [np.array([p[j] for p in per_value]) for j in range(len(per_value[0]))]
    new = np.flatnonzero(problem.bucket < 0)
    per_value = [rng.permutation(new[problem.values[new] == v])
                 for v in np.unique(problem.values[new]).tolist()]
    count = min(len(p) for p in per_value)
    groups += [np.array([p[j] for p in per_value]) for j in range(count)]
    return groups


def census_like(seed: int, m: int = 3) -> WholeReleaseProblem:
    """Two buckets of old rows (complete groups) and new rows, three values each."""
    rng = np.random.default_rng(seed)
    values, bucket = [], []
    for b in range(2):
        for _ in range(8):
            values += [3 * b, 3 * b + 1, 3 * b + 2]
            bucket += [b] * 3
    for _ in range(10):
        values += [6, 7, 8]
        bucket += [-1] * 3
    n = len(values)
    return WholeReleaseProblem(rng.random((n, 2)), np.array(values), np.array(bucket),
                               (frozenset({0, 1, 2}), frozenset({3, 4, 5})), m, 9)


@pytest.mark.parametrize("seed", range(2))
def test_search_keeps_the_release_valid_and_improves_a_poor_start(seed: int) -> None:
    problem = census_like(seed)
    start = scattered_release(problem, seed)
    assert release_problems(problem, start, np.zeros(0, np.int64)) == []
    found = improve_by_neighbourhoods(problem, start, deadline=time.perf_counter() + 1.0,
                                      seed=seed)
    groups = list(found.groups)
    assert release_problems(problem, groups, np.zeros(0, np.int64)) == []
    before, after = costs(problem, start), costs(problem, groups)
    assert after[0] <= before[0]
    assert after[1] < before[1]  # random groups of points in the unit square: improvable
    assert found.solved > 0 and found.improved > 0


def test_solve_whole_release_uses_the_search_above_its_size(
        monkeypatch: pytest.MonkeyPatch) -> None:
    problem = census_like(5)
    start = scattered_release(problem, 5)
    monkeypatch.setattr(whole_release, "WHOLE_MODEL_ROWS", 20)
    answer = solve_whole_release(problem, time_limit=1.5, hint=(start, []))
    assert release_problems(problem, list(answer.groups), answer.deferred) == []
    assert "large-neighbourhood search" in answer.detail
    assert answer.status_a == "OPTIMAL" and answer.objective_a == 0
    assert answer.status_b in ("FEASIBLE", "HEURISTIC")
    assert answer.bound_b <= answer.objective_b
    assert answer.objective_b < costs(problem, start)[1]


def test_search_with_a_custom_extent_measures_with_it() -> None:
    """A non-box extent (here the box of the first coordinate only) is the one improved."""
    problem = census_like(8)
    start = scattered_release(problem, 8)

    def first_only(rows: np.ndarray) -> float:
        chosen = problem.points[np.asarray(rows, dtype=np.int64), 0]
        return float(chosen.max() - chosen.min()) if len(chosen) else 0.0

    def cost_of(groups: list[np.ndarray]) -> float:
        return sum(len(group_signature(problem, g)) * first_only(g) for g in groups)

    found = improve_by_neighbourhoods(problem, start, deadline=time.perf_counter() + 1.0,
                                      seed=8, extent=first_only)
    groups = list(found.groups)
    assert release_problems(problem, groups, np.zeros(0, np.int64)) == []
    assert cost_of(groups) < cost_of(start)


def test_keep_signatures_keeps_every_rows_signature() -> None:
    """With keep_signatures every row ends in a group of its starting signature (so the
    buckets of the next release are those of the start), and the release still improves."""
    problem = census_like(9)
    rng = np.random.default_rng(9)
    new = np.flatnonzero(problem.bucket < 0)
    # new rows in groups of two different signatures: {6, 7, 8} and {6, 7, 8} padded apart
    start = [g for g in scattered_release(problem, 9) if (problem.bucket[g] >= 0).any()]
    shuffled = rng.permutation(new)
    by_value = {v: shuffled[problem.values[shuffled] == v] for v in (6, 7, 8)}
    start += [np.array([by_value[6][j], by_value[7][j], by_value[8][j]]) for j in range(10)]
    before = {int(i): group_signature(problem, g) for g in start for i in g.tolist()}
    found = improve_by_neighbourhoods(problem, start, deadline=time.perf_counter() + 1.0,
                                      seed=9, keep_signatures=True)
    groups = list(found.groups)
    assert release_problems(problem, groups, np.zeros(0, np.int64)) == []
    after = {int(i): group_signature(problem, g) for g in groups for i in g.tolist()}
    assert after == before
    assert costs(problem, groups)[1] < costs(problem, start)[1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_keep_signatures_leaves_groups_wider_than_m_whole(seed: int) -> None:
    """A first release (m = 3) whose groups hold four values each: re-partitioned freely,
    four rows of four values may become a group of three and a left row elsewhere, giving
    rows other signatures. With keep_signatures such groups are not searched, so every row
    keeps its signature; without it, the search finds such a cut (it lowers (b))."""
    rng = np.random.default_rng(seed)
    values = np.tile(np.arange(4), 12)
    points = rng.random((len(values), 2))
    problem = WholeReleaseProblem(points, values, np.full(len(values), -1), (), 3, 4)
    start = [np.flatnonzero(values == v)[rng.permutation(12)] for v in range(4)]
    groups = [np.array([start[v][j] for v in range(4)]) for j in range(12)]
    before = {int(i): group_signature(problem, g) for g in groups for i in g.tolist()}
    runs = {}
    for keep in (True, False):
        found = improve_by_neighbourhoods(problem, groups, deadline=time.perf_counter() + 0.5,
                                          seed=seed, keep_signatures=keep)
        assert release_problems(problem, list(found.groups), np.zeros(0, np.int64)) == []
        runs[keep] = {int(i): group_signature(problem, g) for g in found.groups
                      for i in g.tolist()}
    assert runs[True] == before
    assert runs[False] != before
