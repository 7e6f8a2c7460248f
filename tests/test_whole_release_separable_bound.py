"""The bound from one relaxation per QI (republish.models.whole_release_separable_bound)
against the exhaustive optimum of tests/test_whole_release_model.py: never above the least
(b) of the releases whose (a) is optimal (box and hierarchy extents, the perimeter and
NCP); exact where the relaxation is (one numeric QI, one bucket: a Monge assignment)."""

from __future__ import annotations

import dataclasses
import math
import time
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_whole_release_model import brute_force
from test_whole_release_pair_bound import ncp_optimum
from test_whole_release_row_bound import coarse_problems, hierarchy_optimum, hierarchy_problems

import republish.models.whole_release_separable_bound as separable_module
from republish.models.whole_release import WholeReleaseProblem, solve_whole_release
from republish.models.whole_release_counts import rational_weight
from republish.models.whole_release_separable_bound import separable_bound
from republish.objectives import ReleaseCost
from republish.schema import QIAttribute, Schema

SCHEMA_BOX = Schema("id", "sa", (QIAttribute("x", "numeric"), QIAttribute("y", "numeric")))
SCHEMA_LINE = Schema("id", "sa", (QIAttribute("x", "numeric"),))


def start(problem: WholeReleaseProblem, a_star: Fraction, cost: ReleaseCost | None = None
          ) -> list[np.ndarray] | None:
    """A release whose (a) is ``a_star`` (the model's, proven on such tiny problems)."""
    extent = None if cost is None else cost.model_extent(lambda rows: 0)
    answer = solve_whole_release(problem, time_limit=5.0, extent=extent)
    return answer.groups if answer.objective_a == a_star else None


def bound_of(problem: WholeReleaseProblem, cost: ReleaseCost, a_star: Fraction,
             groups: list[np.ndarray]) -> float:
    found = separable_bound(problem, cost, a_star, rational_weight(problem.deferral_weight),
                            groups, deadline=time.perf_counter() + 30.0)
    assert found.converged  # tiny LPs converge: the bound is their value
    assert found.bound == pytest.approx(sum(max(b, 0.0) for b in found.per_qi))
    return found.bound


def one_bucket(seed: int, per_value: int, qis: int, m: int = 3
               ) -> tuple[WholeReleaseProblem, list[np.ndarray]]:
    """Old rows of one bucket of ``m`` values, ``per_value`` each, on a grid of ``qis``
    numeric QIs, and a release of them: its ``k``-th rows of each value together."""
    rng = np.random.default_rng(seed)
    values = np.repeat(np.arange(m), per_value)
    points = rng.integers(0, 10, (len(values), qis)) / 10
    problem = WholeReleaseProblem(points, values, np.zeros(len(values), np.int64),
                                  (frozenset(range(m)),), m, m)
    groups = [np.flatnonzero(values == v) for v in range(m)]
    return problem, [np.array([g[k] for g in groups]) for k in range(per_value)]


def below_optimum(problem: WholeReleaseProblem, cost: ReleaseCost,
                  optimum: tuple[Fraction, float] | None,
                  start_cost: ReleaseCost | None = None) -> None:
    """The bound, started from a release of the optimal (a), is at most the exhaustive
    ``optimum`` (nothing to check where there is no release or the model's (a) differs)."""
    if optimum is None:
        return
    groups = start(problem, optimum[0], start_cost)
    if groups is None:
        return
    assert bound_of(problem, cost, optimum[0], groups) <= optimum[1] + 1e-7


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(coarse_problems())
def test_bound_never_exceeds_the_optimum_box(problem: WholeReleaseProblem) -> None:
    # the reference's box
    below_optimum(problem, ReleaseCost(schema=SCHEMA_BOX, points=problem.points),
                  brute_force(problem))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchy_problems())
def test_bound_never_exceeds_the_optimum_hierarchy(
        case: tuple[WholeReleaseProblem, ReleaseCost]) -> None:
    problem, cost = case
    below_optimum(problem, cost, hierarchy_optimum(problem, cost), start_cost=cost)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(coarse_problems())
def test_ncp_bound_never_exceeds_the_ncp_optimum(problem: WholeReleaseProblem) -> None:
    below_optimum(problem, ReleaseCost(schema=SCHEMA_BOX, points=problem.points, name="ncp"),
                  ncp_optimum(problem))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 4), st.integers(1, 4), st.integers(0, 10**6))
def test_one_numeric_qi_one_bucket_is_exact(m: int, per_value: int, seed: int) -> None:
    """One bucket of ``m`` values with ``per_value`` old rows each and nothing new: on a
    line the group cost (max - min) is Monge, so sorting solves the assignment and its LP
    is integral -- the bound is the optimum, not only below it."""
    rng = np.random.default_rng(seed)
    n = m * per_value
    points = rng.integers(0, 20, (n, 1)) / 20
    values = np.repeat(np.arange(m), per_value)
    problem = WholeReleaseProblem(points, values, np.zeros(n, np.int64),
                                  (frozenset(range(m)),), m, m)
    # the optimum: the k-th smallest of every value together
    ordered = np.sort(points[:, 0].reshape(m, per_value), axis=1)
    optimum = float(m * (ordered.max(axis=0) - ordered.min(axis=0)).sum())
    groups = [np.flatnonzero(values == v)[np.argsort(points[values == v, 0])]
              for v in range(m)]
    start_groups = [np.array([g[k] for g in groups]) for k in range(per_value)][::-1]
    cost = ReleaseCost(schema=SCHEMA_LINE, points=points)
    assert bound_of(problem, cost, Fraction(0), start_groups) == pytest.approx(optimum,
                                                                              abs=1e-7)


def test_a_bound_without_class_capacities_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deliberately wrong Lagrangian bound, charging each class's least reduced cost once
    whatever its rows, exceeds the optimum on the first round: the checks above can fail.
    Two values, three rows each at one point, far apart in pairs: the start's groups are
    the worst pairing and every class holds three rows."""
    points = np.array([[0.0], [0.0], [0.0], [1.0], [1.0], [1.0],
                       [0.0], [0.0], [0.0], [1.0], [1.0], [1.0]])
    values = np.array([0] * 6 + [1] * 6)
    problem = WholeReleaseProblem(points, values, np.zeros(12, np.int64),
                                  (frozenset({0, 1}),), 2, 2)
    cost = ReleaseCost(schema=SCHEMA_LINE, points=points)
    worst = [np.array([i, 9 + i]) for i in range(3)] + [np.array([3 + i, 6 + i])
                                                       for i in range(3)]
    weight = rational_weight(1.0)
    # the LP starts from the worst pairing alone (not also from the sorted regrouping,
    # which here is the optimum)
    monkeypatch.setattr(separable_module, "_sorted_groups", lambda *args: [])
    right = separable_bound(problem, cost, Fraction(0), weight, worst,
                            deadline=time.perf_counter() + 10)
    assert right.bound == pytest.approx(0.0, abs=1e-9)  # pure pairs cost nothing
    from republish.models.whole_release_columns import least_of_solution

    monkeypatch.setattr(separable_module, "_solution_least", lambda least, capacity, most:
                        least_of_solution(np.minimum(least[np.isfinite(least)], 0.0), most))
    monkeypatch.setattr(separable_module, "CONVERGED", math.inf)  # stop at round one
    wrong = separable_bound(problem, cost, Fraction(0), weight, worst,
                            deadline=time.perf_counter() + 10)
    assert wrong.bound > 1e-6


def test_the_bound_needs_the_qis_of_a_release_cost() -> None:
    problem = WholeReleaseProblem(np.zeros((2, 2)), np.array([0, 1]), np.full(2, -1), (), 2,
                                  2)
    with pytest.raises(TypeError, match="ReleaseCost"):
        separable_bound(problem, object(), 0, rational_weight(1.0), [np.array([0, 1])],
                        deadline=time.perf_counter() + 1)


def test_a_release_with_old_rows_is_bounded_above_the_pair_bound_at_m_7() -> None:
    """A later release of seven-value buckets (the case the pair bound, dividing every
    group's extent among 12 pairs, bounds loosely): the relaxations per QI bound higher."""
    from republish.models.whole_release_pair_bound import pair_bound

    rng = np.random.default_rng(5)
    m, per_value = 7, 3
    signature = frozenset(range(m))
    values = np.repeat(np.arange(m), per_value)
    points = np.column_stack([rng.integers(0, 10, len(values)) / 10,
                              rng.integers(0, 2, len(values)).astype(float)])
    problem = WholeReleaseProblem(points, values, np.zeros(len(values), np.int64),
                                  (signature,), m, m)
    groups = [np.flatnonzero(values == v) for v in range(m)]
    release = [np.array([g[k] for g in groups]) for k in range(per_value)]
    cost = ReleaseCost(schema=SCHEMA_BOX, points=points)
    found = bound_of(problem, cost, Fraction(0), release)
    assert found > pair_bound(problem, None, Fraction(0)).bound + 1e-6
    own = float(sum(m * cost.extent(g) for g in release))
    assert found <= own + 1e-9
    # no time: no LP bounds, each QI counts 0 (never a number the LP did not reach)
    late = separable_bound(problem, cost, 0, rational_weight(1.0), release,
                           deadline=time.perf_counter() - 1.0)
    assert late.bound == 0.0 and not late.converged
    assert all(b == -math.inf for b in late.per_qi)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(coarse_problems())
def test_an_unproven_later_release_reports_the_relaxations_per_qi(
        problem: WholeReleaseProblem) -> None:
    """Where no table holds every column and stage 2 proves nothing (both forced here), a
    later release's bound is the relaxations' per QI: never above the exhaustive optimum,
    and named in the answer's detail."""
    from unittest import mock

    import republish.models.whole_release as whole_module

    if not problem.has_old_rows:
        return
    optimum = brute_force(problem)
    if optimum is None:
        return
    cost = ReleaseCost(schema=SCHEMA_BOX, points=problem.points)
    real_stage2 = whole_module.stage2

    def unproven(*args: object, **kwargs: object) -> object:
        found = real_stage2(*args, **kwargs)
        return dataclasses.replace(found, status="FEASIBLE", bound=-math.inf)

    with mock.patch.object(whole_module, "stage2", unproven), \
            mock.patch.object(whole_module, "TABLE_COLUMNS", 0), \
            mock.patch.object(whole_module, "lower_bound_b", lambda *a, **k: 0.0), \
            mock.patch.object(whole_module, "cycle_cover_bound", lambda *a, **k: 0.0):
        answer = solve_whole_release(problem, time_limit=5.0,
                                     extent=cost.model_extent(lambda rows: 0))
    if answer.objective_a != optimum[0]:
        return
    assert "relaxations per QI" in answer.detail
    assert answer.status_b != "OPTIMAL"
    assert answer.bound_b <= optimum[1] + 1e-7
    groups = start(problem, optimum[0])
    assert groups is not None
    assert answer.bound_b == pytest.approx(max(0.0, bound_of(problem, cost, optimum[0],
                                                             groups)), abs=1e-6)


def test_a_release_whose_columns_all_fit_in_the_table_does_not_run_them() -> None:
    """Where every column fits in a table built in time, column generation converges and
    proves: the relaxations per QI keep out of its time. Where not, they run, unless the
    budget leaves them less than SEPARABLE_SECONDS_PER_ROW a row."""
    from unittest import mock

    from test_whole_release_model import random_later_release

    import republish.models.whole_release as whole_module
    import republish.models.whole_release_tables as tables_module

    problem = random_later_release(3, buckets=2, domain=4, most_per_value=2, new=3, grid=5)
    extent = ReleaseCost(schema=SCHEMA_BOX, points=problem.points).model_extent(
        lambda rows: 0)

    def solve(table_columns: int, per_row: float = whole_module.SEPARABLE_SECONDS_PER_ROW,
              per_column: float = tables_module.TABLE_SECONDS_PER_COLUMN
              ) -> tuple[float, int]:
        spy = mock.Mock(wraps=separable_bound)
        with mock.patch.object(whole_module, "separable_bound", spy), \
                mock.patch.object(whole_module, "SEPARABLE_SECONDS_PER_ROW", per_row), \
                mock.patch.object(tables_module, "TABLE_SECONDS_PER_COLUMN", per_column), \
                mock.patch.object(whole_module, "TABLE_COLUMNS", table_columns):
            answer = solve_whole_release(problem, time_limit=5.0, extent=extent)
        assert answer.status_b == "OPTIMAL"
        return answer.objective_b, spy.call_count

    optimum, calls = solve(whole_module.TABLE_COLUMNS)
    assert calls == 0
    assert solve(0) == (pytest.approx(optimum), 1)  # no table: priced by anchors
    assert solve(0, per_row=10.0) == (pytest.approx(optimum), 0)  # 10 s a row: no time
    # a table that fits but would end past its deadline (a minute a column): not built,
    # so they run (and the model proves the release without it)
    assert solve(whole_module.TABLE_COLUMNS, per_column=60.0)[1] == 1
    # a table built in time that would leave the LP too few rounds: they run as well
    with mock.patch.object(whole_module, "SEPARABLE_TABLE_SHARE", 0.0):
        assert solve(whole_module.TABLE_COLUMNS) == (pytest.approx(optimum), 1)


def test_with_two_workers_they_run_beside_the_model_and_bound_the_release() -> None:
    """With ``workers=2`` the relaxations per QI run in a second process: the model's own
    process never computes them, and the unproven release reports their converged bound,
    the one computed in the process from the release's own groups."""
    from unittest import mock

    from test_whole_release_model import random_later_release

    import republish.models.whole_release as whole_module

    problem = random_later_release(11, buckets=2, domain=4, most_per_value=2, new=3, grid=5)
    cost = ReleaseCost(schema=SCHEMA_BOX, points=problem.points)
    real_stage2 = whole_module.stage2

    def unproven(*args: object, **kwargs: object) -> object:
        found = real_stage2(*args, **kwargs)
        return dataclasses.replace(found, status="FEASIBLE", bound=-math.inf)

    spy = mock.Mock(wraps=separable_bound)  # calls in the child are not counted here
    with mock.patch.object(whole_module, "stage2", unproven), \
            mock.patch.object(whole_module, "separable_bound", spy), \
            mock.patch.object(whole_module, "TABLE_COLUMNS", 0), \
            mock.patch.object(whole_module, "lower_bound_b", lambda *a, **k: 0.0), \
            mock.patch.object(whole_module, "cycle_cover_bound", lambda *a, **k: 0.0):
        answer = solve_whole_release(problem, time_limit=3.0, workers=2,
                                     extent=cost.model_extent(lambda rows: 0))
    assert spy.call_count == 0
    assert answer.status_a == "OPTIMAL" and answer.status_b != "OPTIMAL"
    assert "relaxations per QI" in answer.detail and "(converged)" in answer.detail
    own = bound_of(problem, cost, Fraction(answer.objective_a).limit_denominator(1000),
                   list(answer.groups))
    assert own > 0.0
    assert answer.bound_b == pytest.approx(own, abs=1e-6)
    assert answer.bound_b <= answer.objective_b + 1e-9


def test_each_qi_is_reported_as_it_converges() -> None:
    """``report`` receives the bound after each QI, rising to the returned one."""
    problem, groups = one_bucket(3, per_value=3, qis=3)
    points = problem.points
    schema = Schema("id", "sa", tuple(QIAttribute(f"x{i}", "numeric") for i in range(3)))
    cost = ReleaseCost(schema=schema, points=points)
    reports: list[object] = []
    found = separable_bound(problem, cost, 0, rational_weight(1.0), groups,
                            deadline=time.perf_counter() + 30.0, report=reports.append)
    assert len(reports) == 3
    bounds = [r.bound for r in reports]  # type: ignore[attr-defined]
    assert bounds == sorted(bounds) and bounds[-1] == found.bound > bounds[0]
    assert [r.converged for r in reports] == [False, False, True]  # type: ignore[attr-defined]


def test_an_abnormal_lp_solve_is_solved_again_from_scratch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """GLOP re-solving from the last basis can end ABNORMAL (seen once on a later release
    at m = 7): the master is rebuilt and solved from scratch, and the bound is the one an
    undisturbed run reaches, not a QI left unbounded."""
    from ortools.linear_solver import pywraplp

    problem, release = one_bucket(7, per_value=4, qis=2)
    cost = ReleaseCost(schema=SCHEMA_BOX, points=problem.points)
    undisturbed = bound_of(problem, cost, Fraction(0), release)
    real_solve = pywraplp.Solver.Solve
    calls = {"n": 0}

    def second_fails(self: pywraplp.Solver) -> int:
        calls["n"] += 1
        return pywraplp.Solver.ABNORMAL if calls["n"] == 2 else real_solve(self)

    monkeypatch.setattr(pywraplp.Solver, "Solve", second_fails)
    assert bound_of(problem, cost, Fraction(0), release) == pytest.approx(undisturbed)
    assert calls["n"] >= 3  # the failed solve, then the same round again from scratch
    assert undisturbed > 0
