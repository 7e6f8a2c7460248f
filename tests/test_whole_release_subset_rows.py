"""Subset-row cuts on the fixed pool of the whole-release model
(republish.models.whole_release_subset_rows) against brute force: the separation finds
exactly the violated triples, the tightened bound never passes the optimum, and the columns
it keeps still hold an optimal solution."""

from __future__ import annotations

import itertools
import math
import time
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_whole_release_model import brute_force, check_release

from republish.models import whole_release
from republish.models.whole_release import WholeReleaseProblem, solve_whole_release
from republish.models.whole_release_bound import Master
from republish.models.whole_release_subset_rows import separate_subset_rows, tighten_pool


def as_members(columns: list[tuple[int, ...]]) -> np.ndarray:
    width = max(len(c) for c in columns)
    return np.array([list(c) + [-1] * (width - len(c)) for c in columns], dtype=np.int64)


def master_of(columns: list[tuple[int, ...]], cost: list[float], rows: int,
              exact: np.ndarray, a_coef: list[int] | None = None, rhs: int = 0) -> Master:
    return Master(as_members(columns), np.asarray(cost, dtype=np.float64),
                  np.asarray(a_coef or [0] * len(columns), dtype=np.int64), rhs, exact,
                  np.zeros(rows, dtype=np.int64), np.full(rows, -math.inf))


def solutions(columns: list[tuple[int, ...]], cost: list[float], rows: int,
              exact: np.ndarray, allowed: set[int] | None = None,
              a_coef: list[int] | None = None, rhs: int = 0
              ) -> list[tuple[float, tuple[int, ...]]]:
    """Every choice of disjoint columns covering every exact row (and within the (a) row
    ``Σ a_coef <= rhs``), with its cost."""
    found = []
    a_coef = a_coef or [0] * len(columns)
    ids = [c for c in range(len(columns)) if allowed is None or c in allowed]
    for size in range(rows + 1):
        for chosen in itertools.combinations(ids, size):
            held = [r for c in chosen for r in columns[c]]
            if len(held) == len(set(held)) and set(np.flatnonzero(exact)) <= set(held) \
                    and sum(a_coef[c] for c in chosen) <= rhs:
                found.append((sum(cost[c] for c in chosen), chosen))
    return found


def optimum(columns: list[tuple[int, ...]], cost: list[float], rows: int, exact: np.ndarray,
            allowed: set[int] | None = None) -> float:
    return min((v for v, _ in solutions(columns, cost, rows, exact, allowed)),
               default=math.inf)


@st.composite
def packings(draw: st.DrawFn) -> tuple[list[tuple[int, ...]], int]:
    rows = draw(st.integers(3, 7))
    count = draw(st.integers(2, 12))
    columns = [tuple(sorted(draw(st.sets(st.integers(0, rows - 1), min_size=1, max_size=4))))
               for _ in range(count)]
    return columns, rows


@settings(max_examples=150, deadline=None)
@given(packings(), st.lists(st.floats(0.0, 1.0), min_size=12, max_size=12))
def test_separation_finds_exactly_the_violated_triples(
        instance: tuple[list[tuple[int, ...]], int], raw: list[float]) -> None:
    columns, rows = instance
    x = np.asarray(raw[:len(columns)])
    cover = np.zeros(rows)
    for c, held in enumerate(columns):
        cover[list(held)] += x[c]
    # scaled so that every row is covered at most once, as in the LP
    x = np.array([x[c] / max(1.0, cover[list(held)].max()) for c, held in enumerate(columns)])
    found = separate_subset_rows(as_members(columns), x, rows, limit=10**6)
    expected = {}
    for triple in itertools.combinations(range(rows), 3):
        lhs = sum(x[c] for c, held in enumerate(columns) if len(set(held) & set(triple)) >= 2)
        if lhs > 1 + 1e-3:
            expected[triple] = lhs
    assert {s for s, _ in found} == set(expected)
    for triple, lhs in found:
        assert lhs == pytest.approx(expected[triple])
    assert [lhs for _, lhs in found] == sorted((lhs for _, lhs in found), reverse=True)


def test_one_cut_closes_the_odd_cycle() -> None:
    """Three rows, the three pairs at 1 and singletons at 1.5: the LP takes each pair at
    1/2 (1.5); the cut on the three rows leaves only the integral optimum 2.5."""
    columns = [(0, 1), (1, 2), (0, 2), (0,), (1,), (2,)]
    cost = [1.0, 1.0, 1.0, 1.5, 1.5, 1.5]
    master = master_of(columns, cost, 3, np.ones(3, bool))
    incumbent = np.array([3, 4, 5])  # the singletons, 4.5
    result = tighten_pool(master, np.arange(6), incumbent, 4.5, np.zeros(6),
                          deadline=time.perf_counter() + 10)
    assert result is not None and result.converged
    assert result.cuts == ((0, 1, 2),)
    # the cut's columns, handed to SCIP: the three pairs, none of the singletons
    assert [c.tolist() for c in result.cut_columns] == [[0, 1, 2]]
    assert result.bound == pytest.approx(2.5)
    # every column has reduced cost <= 4.5 - 2.5 here: nothing is fixed out wrongly
    assert optimum(columns, cost, 3, np.ones(3, bool), set(result.keep.tolist())) == 2.5


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packings(), st.lists(st.floats(0.1, 3.0), min_size=12, max_size=12),
       st.lists(st.booleans(), min_size=7, max_size=7), st.floats(0.0, 2.0),
       st.lists(st.integers(-2, 2), min_size=12, max_size=12), st.integers(0, 3))
def test_tightened_bound_and_kept_columns_against_brute_force(
        instance: tuple[list[tuple[int, ...]], int], raw_cost: list[float],
        exact_rows: list[bool], slack: float, raw_a: list[int], rhs: int) -> None:
    """Exact and at-most-once rows, and an (a) row (counterfeits, deferrals) on top."""
    columns, rows = instance
    columns = columns + [(r,) for r in range(rows)]  # singletons: always feasible
    cost = raw_cost[:len(columns) - rows] + [3.0 + 0.1 * r for r in range(rows)]
    a_coef = raw_a[:len(columns) - rows] + [0] * rows
    exact = np.asarray(exact_rows[:rows])
    every = solutions(columns, cost, rows, exact, a_coef=a_coef, rhs=rhs)
    best, chosen = min(every)
    upper = best + slack  # the incumbent: an optimal solution, claimed at `upper`
    master = master_of(columns, cost, rows, exact, a_coef, rhs)
    result = tighten_pool(master, np.arange(len(columns)), np.asarray(chosen, dtype=np.int64),
                          upper, np.asarray(cost), deadline=time.perf_counter() + 10)
    assert result is not None
    assert min(upper, result.bound) <= best + 1e-9
    # every solution of cost <= upper uses only the columns kept
    kept = set(result.keep.tolist())
    for value, used in every:
        if value <= upper + 1e-9:
            assert set(used) <= kept


@pytest.mark.parametrize("seed", [5, 31, 47, 51])
def test_model_proves_the_optimum_through_the_cuts(seed: int) -> None:
    """First releases whose fixed pool exceeds a tiny column cap: the pool's LP with cuts
    fixes again, SCIP with the cuts proves the brute-force optimum."""
    rng = np.random.default_rng(seed)
    m = 2 + seed % 2
    n, domain = int(rng.integers(8, 13)), m + int(rng.integers(0, 3))
    problem = WholeReleaseProblem(rng.integers(0, 8, (n, 2)) / 8, rng.integers(0, domain, n),
                                  np.full(n, -1), (), m, domain)
    with mock.patch.object(whole_release, "TABLE_COLUMNS", 0):
        solution = solve_whole_release(problem, time_limit=20.0, max_columns=12)
    assert "subset-row cuts" in solution.detail and "SCIP on the" in solution.detail
    assert int(solution.detail.split(" subset-row cuts")[0].rsplit(" ", 1)[1]) > 0
    check_release(problem, solution)
    optimum_a, optimum_b = brute_force(problem)
    assert solution.status_b == "OPTIMAL" and solution.objective_a == float(optimum_a)
    assert solution.objective_b == pytest.approx(optimum_b, abs=1e-6)


def test_proving_settings_are_accepted_and_fall_back_when_rejected() -> None:
    """The proving run's SCIP settings name parameters this SCIP knows (else every proof
    would silently fall back to the defaults), and a rejected setting falls back."""
    from ortools.linear_solver.python import model_builder

    from republish.models import whole_release_restricted as restricted

    model = model_builder.Model()
    x = model.new_bool_var("x")
    model.add(x <= 1)
    model.minimize(x)
    solver = model_builder.Solver("scip")
    solver.set_solver_specific_parameters(restricted.PROVING_PARAMETERS)
    assert solver.solve(model) == model_builder.SolveStatus.OPTIMAL
    columns = [(0, 1), (1, 2), (0, 2), (0,), (1,), (2,)]
    master = master_of(columns, [1.0, 1.0, 1.0, 1.5, 1.5, 1.5], 3, np.ones(3, bool))
    with mock.patch.object(restricted, "PROVING_PARAMETERS", "heuristics/none/freq = -1\n"):
        status, chosen, value, _ = restricted.solve_restricted(
            master, np.arange(6), [3, 4, 5], 10.0, 0, cuts=[np.array([0, 1, 2])],
            proving=True)  # the columns holding two rows of the triple (0, 1, 2)
    assert status == "OPTIMAL" and value == pytest.approx(2.5) and len(chosen) == 2


def test_the_a_row_prices_the_columns() -> None:
    """A binding (a) row: the pair (0, 1) needs a counterfeit (+1) that only deferring row
    2 pays for (-1), so the optimum 1.1 takes both; the (a) row's dual must enter every
    reduced cost, or the deferral's column looks dearer than it is and is fixed out."""
    columns = [(0, 1), (0, 1, 2), (0,), (1,), (2,)]
    cost = [1.0, 1.5, 1.0, 1.0, 0.1]
    a_coef = [1, -1, 0, 0, -1]
    exact = np.array([True, True, False])
    master = master_of(columns, cost, 3, exact, a_coef, 0)
    best, chosen = min(solutions(columns, cost, 3, exact, a_coef=a_coef, rhs=0))
    assert best == pytest.approx(1.1) and set(chosen) == {0, 4}
    for slack in (0.0, 0.05, 0.3):
        result = tighten_pool(master, np.arange(5), np.array([1]), 1.5, np.asarray(cost),
                              deadline=time.perf_counter() + 10)
        assert result is not None and min(1.5, result.bound) <= best + 1e-9
        assert {0, 4} <= set(result.keep.tolist())
        result = tighten_pool(master, np.arange(5), np.array(chosen), best + slack,
                              np.asarray(cost), deadline=time.perf_counter() + 10)
        # the LP is integral here: with the (a) row's dual in every reduced cost, the
        # bound is the LP's value (without it, column (0, 1) would price below zero)
        assert result is not None and result.bound == pytest.approx(best)
        assert {0, 4} <= set(result.keep.tolist())
