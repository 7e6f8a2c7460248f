"""The m-row relaxation of a release without old rows
(republish.models.whole_release_subset_bound): its column generation reaches the LP over
every m-row group (enumerated here), which never exceeds the exhaustive optimum; it applies
only where its argument holds; and solve_whole_release reports it where the model's own
groups do not fit in a table."""

from __future__ import annotations

import dataclasses
import itertools
import math
import multiprocessing
import re
import time
from collections.abc import Callable
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.linear_solver import pywraplp
from test_whole_release_model import brute_force, random_release

import republish.models.whole_release as whole_release
import republish.models.whole_release_subset_bound as whole_release_subset_bound
from republish.models.whole_release import WholeReleaseProblem, solve_whole_release
from republish.models.whole_release_columns import stage2
from republish.models.whole_release_counts import BoxExtent
from republish.models.whole_release_extent_tables import tabulated
from republish.models.whole_release_problem import release_problems
from republish.models.whole_release_subset_bound import (
    SubsetBound,
    cheapest_groups,
    relaxation_size,
    subset_bound,
    subset_bound_applies,
)


def first_release(seed: int, n: int | None = None) -> WholeReleaseProblem:
    rng = np.random.default_rng(seed)
    m = 2 + seed % 2
    n = n or int(rng.integers(6, 10))
    domain = m + int(rng.integers(0, 3))
    return WholeReleaseProblem(
        rng.integers(0, 8, (n, 2)) / 8, rng.integers(0, domain, n), np.full(n, -1), (), m,
        domain, allow_deferrals=bool(seed % 3 == 0), deferral_weight=0.75,
        counterfeits_in_new_groups=bool(seed % 4 < 2))


def lp_over_every_m_row_group(problem: WholeReleaseProblem) -> float | None:
    """``min Σ m·ext(S)·x_S``, every row covered once, over all m-row groups of distinct
    values (GLOP); None when infeasible."""
    n, m = len(problem.values), problem.m
    solver = pywraplp.Solver.CreateSolver("GLOP")
    cover = [solver.Constraint(1.0, 1.0) for _ in range(n)]
    objective = solver.Objective()
    objective.SetMinimization()
    extent = BoxExtent(problem.points)
    for rows in itertools.combinations(range(n), m):
        if len(set(problem.values[list(rows)].tolist())) < m:
            continue
        x = solver.NumVar(0.0, solver.infinity(), "")
        objective.SetCoefficient(x, m * extent(np.array(rows)))
        for i in rows:
            cover[i].SetCoefficient(x, 1.0)
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    return float(objective.Value())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_relaxation_equals_the_enumerated_lp_and_bounds_the_optimum(seed: int) -> None:
    problem = first_release(seed)
    optimum = brute_force(problem)
    if optimum is None or optimum[0] != 0:  # the argument needs (a) = 0
        return
    table = tabulated(BoxExtent(problem.points))
    assert subset_bound_applies(problem, Fraction(0), table)
    groups, deferred = random_release(problem, seed)
    if deferred or any(len(g) < problem.m for g in groups):
        groups = list(solve_whole_release(problem, time_limit=20.0).groups)
    found = subset_bound(problem, table, [np.array(g) for g in groups], deadline=math.inf)
    assert found.converged
    expected = lp_over_every_m_row_group(problem)
    assert expected is not None
    # exact pricing: the LP over the generated groups is the LP over all of them
    assert found.bound == pytest.approx(expected, abs=1e-7)
    assert found.bound <= optimum[1] + 1e-9
    # the pool handed to the model: m-row groups of distinct values, the LP's support kept
    m = problem.m
    assert found.pool.shape[1] == m and len(found.pool)
    for group in found.pool:
        assert len(set(problem.values[group].tolist())) == m
        assert (np.diff(group) > 0).all()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 3))
def test_start_holds_each_rows_cheapest_subsets_and_their_cheapest_extensions(
        seed: int, subsets: int, extensions: int) -> None:
    """Brute force over the (k)-row subsets of distinct values: every row's ``subsets``
    cheapest (ties broken as the stable sort does) appear, each joined by each of its
    ``extensions`` cheapest rows of a value it does not hold, and nothing else."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(5, 10)), int(rng.integers(1, 3))
    points = rng.integers(0, 6, (n, 2)) / 6
    values = rng.integers(0, k + 2, n)
    measure = tabulated(BoxExtent(points))
    base = np.array([s for s in itertools.combinations(range(n), k)
                     if len(set(values[list(s)].tolist())) == k], dtype=np.int64).reshape(-1, k)
    extent = np.array([measure(s) for s in base]) if len(base) else np.zeros(0)
    found = cheapest_groups(base, extent, values, measure, subsets, extensions)
    expected = set()
    by_extent = np.argsort(extent, kind="stable")
    for row in range(n):
        mine = [i for i in by_extent if row in base[i]][:subsets]
        for i in mine:
            others = [r for r in range(n) if values[r] not in set(values[base[i]].tolist())]
            joined = sorted(others, key=lambda r: measure(np.append(base[i], r)))
            cut = [measure(np.append(base[i], r)) for r in joined][:extensions]
            for r in others:
                if cut and measure(np.append(base[i], r)) <= cut[-1] + 1e-12:
                    expected.add(tuple(sorted([*base[i].tolist(), r])))
            chosen = {tuple(g) for g in found.tolist() if set(base[i].tolist()) <= set(g)}
            # ties at the cut may go either way; below it every extension is there
            for r in joined[:extensions]:
                if measure(np.append(base[i], r)) < cut[-1] - 1e-12:
                    assert tuple(sorted([*base[i].tolist(), r])) in chosen
            assert sum(1 for g in chosen if set(g) - set(base[i].tolist())) >= \
                min(extensions, len(others))
    for group in found.tolist():
        assert group == sorted(group) and len(set(values[group].tolist())) == k + 1
        assert tuple(group) in expected


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 3), st.integers(1, 3))
def test_a_large_start_extends_subsets_by_their_members_nearest_rows(
        seed: int, subsets: int, extensions: int) -> None:
    """Past JOIN_CELLS (here 0) a start subset is extended by the cheapest of its members'
    NEAR_ROWS nearest rows of another value (points without ties; a row inside the
    subset's box ties with the others there), not by every row."""
    rng = np.random.default_rng(seed)
    n, k, near = int(rng.integers(6, 11)), int(rng.integers(1, 3)), 2
    points = rng.random((n, 2))
    values = rng.integers(0, k + 2, n)
    measure = tabulated(BoxExtent(points))
    base = np.array([s for s in itertools.combinations(range(n), k)
                     if len(set(values[list(s)].tolist())) == k], dtype=np.int64).reshape(-1, k)
    extent = np.array([measure(s) for s in base]) if len(base) else np.zeros(0)
    with mock.patch.object(whole_release_subset_bound, "JOIN_CELLS", 0), \
            mock.patch.object(whole_release_subset_bound, "NEAR_ROWS", near):
        found = {tuple(g) for g in cheapest_groups(base, extent, values, measure, subsets,
                                                   extensions).tolist()}

    def nearest(row: int) -> list[int]:
        others = [r for r in range(n) if values[r] != values[row]]
        return sorted(others, key=lambda r: measure(np.array([row, r])))[:near]

    allowed, needed = set(), set()  # within each subset's cut; strictly below it
    by_extent = np.argsort(extent, kind="stable")
    for row in range(n):
        for i in [i for i in by_extent if row in base[i]][:subsets]:
            held = set(values[base[i]].tolist())
            candidates = {r for member in base[i] for r in nearest(int(member))
                          if values[r] not in held}
            joined = {r: measure(np.append(base[i], r)) for r in candidates}
            cut = sorted(joined.values())[:extensions][-1] if joined else -math.inf
            for r, value in joined.items():  # ties at the cut may go either way
                group = tuple(sorted([*base[i].tolist(), r]))
                if value <= cut + 1e-12:
                    allowed.add(group)
                if value < cut - 1e-12:
                    needed.add(group)
    assert needed <= found <= allowed


def test_a_larger_group_is_covered_fractionally() -> None:
    """Five rows of five values at m = 2 on a line: the partition needs a group of three
    (no pairing covers five rows), which the relaxation covers by its pairs at weight 1/2;
    its bound stays below the optimum (an m-row partition would not exist)."""
    points = np.array([[0.0, 0.0], [0.1, 0.0], [0.2, 0.0], [0.9, 0.0], [1.0, 0.0]])
    problem = WholeReleaseProblem(points, np.arange(5), np.full(5, -1), (), 2, 5)
    optimum = brute_force(problem)
    assert optimum == (0, pytest.approx(3 * 0.2 + 2 * 0.1))
    table = tabulated(BoxExtent(points))
    found = subset_bound(problem, table, [np.array([0, 1, 2]), np.array([3, 4])],
                         deadline=math.inf)
    assert found.converged and found.bound <= optimum[1] + 1e-9
    assert found.bound == pytest.approx(lp_over_every_m_row_group(problem))
    assert found.bound > 0.5  # far above the row bound of the pairs' nearest neighbours


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_smaller_groups_bound_the_optimum_too(seed: int) -> None:
    """Groups of m - 1 rows relax the release as m-row ones do (module docstring): the
    relaxation with ``size = m - 1`` reaches the LP over every such group, which never
    exceeds the optimum over m-unique groups, nor the relaxation over m-row groups."""
    problem = first_release(2 * seed + 1)  # m = 3: groups of two rows
    optimum = brute_force(problem)
    if optimum is None or optimum[0] != 0:
        return
    table = tabulated(BoxExtent(problem.points))
    smaller = problem.m - 1
    assert subset_bound_applies(problem, Fraction(0), table, smaller)
    assert not subset_bound_applies(problem, Fraction(0), table, problem.m + 1)
    start = list(solve_whole_release(problem, time_limit=20.0).groups)
    found = subset_bound(problem, table, start, deadline=math.inf, size=smaller)
    assert found.converged and found.size == smaller
    expected = lp_over_every_m_row_group(dataclasses.replace(problem, m=smaller))
    assert expected is not None
    assert found.bound == pytest.approx(expected, abs=1e-7)
    assert found.bound <= optimum[1] + 1e-9
    assert found.bound <= lp_over_every_m_row_group(problem) + 1e-9  # type: ignore[operator]
    assert found.pool.shape[1] == smaller


@pytest.mark.parametrize("seed", [5, 9, 15])  # m = 3 and (a) = 0 on nine rows
def test_the_model_relaxes_to_smaller_groups_where_the_subsets_do_not_fit(seed: int
                                                                          ) -> None:
    """With a table cap between the (m - 2)- and (m - 1)-row subsets (as 200 Adult rows at
    m = 5 lie between triples and four-row subsets), the model relaxes over groups of
    m - 1 rows, reports that bound, and still proves the release."""
    problem = first_release(seed, n=9)
    optimum = brute_force(problem)
    assert optimum is not None and optimum[0] == 0 and problem.m == 3
    table = tabulated(BoxExtent(problem.points))
    pairs = sum(len(set(problem.values[[i, j]].tolist())) == 2
                for i, j in itertools.combinations(range(len(problem.values)), 2))
    with mock.patch.object(whole_release_subset_bound, "TABLE_COLUMNS", pairs - 1):
        assert relaxation_size(problem, Fraction(0), table) == 2
    with mock.patch.object(whole_release, "TABLE_COLUMNS", 10), \
            mock.patch.object(whole_release_subset_bound, "TABLE_COLUMNS", pairs - 1), \
            mock.patch.object(whole_release_subset_bound, "SUBSET_SECONDS", 0.0):
        solution = solve_whole_release(problem, time_limit=10.0)
    reported = re.search(r"; 2-row relaxation: ([0-9.e+-]+) after \d+ rounds \(converged\)",
                         solution.detail)
    assert reported is not None
    lp = lp_over_every_m_row_group(dataclasses.replace(problem, m=2))
    assert lp is not None and float(reported.group(1)) == pytest.approx(lp, rel=1e-5)
    assert lp <= optimum[1] + 1e-9
    assert solution.status_b == "OPTIMAL"
    assert solution.objective_b == pytest.approx(optimum[1], abs=1e-7)


def test_applies_only_where_the_argument_holds() -> None:
    problem = first_release(1)
    table = tabulated(BoxExtent(problem.points))
    assert subset_bound_applies(problem, Fraction(0), table)
    assert not subset_bound_applies(problem, Fraction(1), table)  # counterfeits possible
    assert not subset_bound_applies(problem, None, table)  # (a) not proven
    values = problem.values
    firsts = [int(np.flatnonzero(values == v)[0]) for v in np.unique(values)[:problem.m]]
    bucket = np.full(len(values), -1)
    bucket[firsts] = 0  # one old row of each of m values: a bucket of the last release
    with_old = WholeReleaseProblem(problem.points, values, bucket,
                                   (frozenset(values[firsts].tolist()),), problem.m,
                                   problem.domain_size)
    assert not subset_bound_applies(with_old, Fraction(0), table)
    assert not subset_bound_applies(problem, Fraction(0), BoxExtent(problem.points).__call__)


def recorder() -> tuple[list[SubsetBound], Callable[..., SubsetBound]]:
    """A stand-in for subset_bound that records the calls made in this process."""
    runs: list[SubsetBound] = []

    def recorded(*args: object, **kwargs: object) -> SubsetBound:
        runs.append(subset_bound(*args, **kwargs))  # type: ignore[arg-type]
        return runs[-1]

    return runs, recorded


@pytest.mark.parametrize("seed", [0, 4, 5, 8])
def test_model_runs_the_relaxation_where_groups_do_not_fit(seed: int) -> None:
    """With the table cap below the m-row groups (as 200 Adult rows at m = 4 are), the
    model runs the relaxation before its column generation; the relaxation's bound is the
    enumerated LP, below the optimum, and the release is still optimal."""
    problem = first_release(seed, n=9)
    optimum = brute_force(problem)
    assert optimum is not None and optimum[0] == 0
    runs, recorded = recorder()

    with mock.patch.object(whole_release, "TABLE_COLUMNS", 10), \
            mock.patch.object(whole_release_subset_bound, "SUBSET_SECONDS", 0.0), \
            mock.patch.object(whole_release, "subset_bound", recorded):
        solution = solve_whole_release(problem, time_limit=10.0)
    assert len(runs) == 1 and runs[0].converged
    assert runs[0].bound == pytest.approx(lp_over_every_m_row_group(problem), abs=1e-7)
    assert runs[0].bound <= optimum[1] + 1e-9
    assert "m-row relaxation" in solution.detail
    assert solution.status_b == "OPTIMAL"
    assert solution.objective_b == pytest.approx(optimum[1], abs=1e-7)


@pytest.mark.parametrize(("time_limit", "runs_expected"), [(2.0, 0), (2.6, 1)])
def test_relaxation_needs_its_seconds(time_limit: float, runs_expected: int) -> None:
    """SUBSET_SHARE of the budget must reach SUBSET_SECONDS: a 2 s release (1 s for the
    relaxation, which bounded no 200-row Adult sample at m = 4) leaves it out, 2.6 s (what a
    3 s release step leaves the model) runs it."""
    problem = first_release(4, n=9)
    runs, recorded = recorder()

    with mock.patch.object(whole_release, "TABLE_COLUMNS", 10), \
            mock.patch.object(whole_release, "subset_bound", recorded):
        solve_whole_release(problem, time_limit=time_limit)
    assert len(runs) == runs_expected


@pytest.mark.parametrize(("large_rows", "order"), [(5, ["relaxation", "search"]),
                                                   (400, ["search", "relaxation"])])
def test_the_relaxation_runs_before_a_long_search(large_rows: int, order: list[str]) -> None:
    """Above UNIQUE_LARGE_ROWS rows (here 5 of 9) the free regrouping takes most of the
    budget: the relaxation runs first, within SUBSET_ROOM times its least time, and the
    search after it; below, the search first and the relaxation in its share."""
    problem = first_release(5, n=9)
    calls: list[str] = []
    deadlines: list[float] = []
    polished_start = whole_release.polished_start

    def relaxation(*args: object, **kwargs: object) -> SubsetBound:
        calls.append("relaxation")
        deadlines.append(float(kwargs["deadline"]) - time.perf_counter())  # type: ignore[arg-type]
        return subset_bound(*args, **kwargs)  # type: ignore[arg-type]

    def search(*args: object, **kwargs: object) -> object:
        calls.append("search")
        return polished_start(*args, **kwargs)  # type: ignore[arg-type]

    with mock.patch.object(whole_release, "TABLE_COLUMNS", 10), \
            mock.patch.object(whole_release_subset_bound, "SUBSET_SECONDS", 0.3), \
            mock.patch.object(whole_release, "UNIQUE_LARGE_ROWS", large_rows), \
            mock.patch.object(whole_release, "subset_bound", relaxation), \
            mock.patch.object(whole_release, "polished_start", search):
        solution = solve_whole_release(problem, time_limit=3.0)
    assert calls == order
    room = whole_release.SUBSET_ROOM * 0.3 if order[0] == "relaxation" else \
        whole_release.SUBSET_SHARE * 3.0
    assert deadlines[0] <= room + 1e-6
    assert "m-row relaxation" in solution.detail and not release_problems(
        problem, solution.groups, solution.deferred)


def test_smaller_groups_are_left_out_of_large_releases() -> None:
    """Above SMALLER_GROUPS_ROWS rows a relaxation over groups smaller than m is not run
    (it stayed below the row bound on Adult), at or below it it is."""
    problem = first_release(5, n=9)
    table = tabulated(BoxExtent(problem.points))
    pairs = sum(len(set(problem.values[[i, j]].tolist())) == 2
                for i, j in itertools.combinations(range(len(problem.values)), 2))
    with mock.patch.object(whole_release_subset_bound, "TABLE_COLUMNS", pairs - 1), \
            mock.patch.object(whole_release_subset_bound, "SUBSET_SECONDS", 0.0):
        assert whole_release_subset_bound.planned_size(problem, Fraction(0), table, 1.0) == 2
        with mock.patch.object(whole_release_subset_bound, "SMALLER_GROUPS_ROWS", 8):
            assert whole_release_subset_bound.planned_size(problem, Fraction(0), table,
                                                           1.0) is None
    assert whole_release_subset_bound.planned_size(problem, Fraction(0), table, 1.0) is None
    assert whole_release_subset_bound.planned_size(problem, Fraction(0), table, 1.3) == 3


def test_larger_releases_need_more_time_for_the_relaxation() -> None:
    seconds = whole_release_subset_bound.subset_seconds
    assert seconds(200) == seconds(400) == whole_release_subset_bound.SUBSET_SECONDS
    assert seconds(2_000) == pytest.approx(8 * seconds(1_000)) and seconds(1_000) > 1.25


fork_only = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                               reason="the relaxation runs beside the model only with fork")


@fork_only
@pytest.mark.parametrize(("time_limit", "workers", "where"), [
    (1.4, 2, None),  # below SUBSET_BESIDE_SECONDS: no second process, too short here
    (2.0, 2, "beside"),  # a second process for the budget
    (2.0, 1, None),  # one worker: here, and 1 s is too short for it
    (2.6, 1, "here"),
    (2.6, 2, "here"),  # its share here is long enough: here, where the ladder follows it
])
def test_two_workers_run_the_relaxation_beside_the_model(time_limit: float, workers: int,
                                                         where: str | None) -> None:
    """With two workers the relaxation runs in a second process (calls there do not reach
    this process's list) for the model's budget, from 1.5 s on where its share here would
    be too short (SUBSET_SHARE x budget below its least time), and its bound is the
    certificate's where the model proves nothing (stage 2 and the other bounds made
    powerless here): the enumerated LP, below the optimum."""
    problem = first_release(5, n=9)
    optimum = brute_force(problem)
    assert optimum is not None and optimum[0] == 0
    runs, recorded = recorder()

    def unproven(*args: object, **kwargs: object) -> object:
        answer = stage2(*args, **kwargs)  # type: ignore[arg-type]
        return dataclasses.replace(answer, status="FEASIBLE", bound=-math.inf)

    with mock.patch.object(whole_release, "TABLE_COLUMNS", 10), \
            mock.patch.object(whole_release, "subset_bound", recorded), \
            mock.patch.object(whole_release, "stage2", unproven), \
            mock.patch.object(whole_release, "lower_bound_b", lambda *a, **k: 0.0), \
            mock.patch.object(whole_release, "cycle_cover_bound", lambda *a, **k: 0.0):
        solution = solve_whole_release(problem, time_limit=time_limit, workers=workers)
    assert len(runs) == (1 if where == "here" else 0)
    reported = re.search(r"m-row relaxation: ([0-9.e+-]+) after \d+ rounds \(converged\)",
                         solution.detail)
    assert (reported is not None) == (where is not None)
    assert solution.status_b == "FEASIBLE"
    if where is None:
        assert solution.bound_b == 0.0
    else:
        lp = lp_over_every_m_row_group(problem)
        assert lp is not None and 0 < lp <= optimum[1] + 1e-9
        assert solution.bound_b == pytest.approx(lp, abs=1e-7)
    assert solution.objective_b >= solution.bound_b - 1e-9


@fork_only
def test_a_proven_release_does_not_wait_for_the_relaxation() -> None:
    """The model proves the small release at once: the relaxation beside it (made slow
    here, and given a least time of 15 s, more than its share here) is stopped, not
    awaited for the rest of the 20 s budget."""
    problem = first_release(5, n=9)
    optimum = brute_force(problem)
    assert optimum is not None

    def slow(*args: object, **kwargs: object) -> object:
        time.sleep(30.0)
        return subset_bound(*args, **kwargs)  # type: ignore[arg-type]

    started = time.perf_counter()
    with mock.patch.object(whole_release, "TABLE_COLUMNS", 10), \
            mock.patch.object(whole_release_subset_bound, "SUBSET_SECONDS", 15.0), \
            mock.patch.object(whole_release, "subset_bound", slow):
        solution = solve_whole_release(problem, time_limit=20.0, workers=2)
    assert solution.status_b == "OPTIMAL"
    assert solution.objective_b == pytest.approx(optimum[1], abs=1e-7)
    assert time.perf_counter() - started < 10.0
