"""The incremental LP master over part of an enumerated column set
(models/whole_release_master.py) and stage 2's pooled LP (models/whole_release_columns.py):
a master holding some columns still bounds every column, and pricing the rest from their
reduced costs reaches the LP over all of them."""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.linear_solver import pywraplp  # type: ignore[attr-defined]
from test_whole_release_slots import cost, random_release

import republish.models.whole_release_columns as whole_release_columns
from republish.models.whole_release import WholeReleaseProblem, solve_whole_release
from republish.models.whole_release_bound import relax
from republish.models.whole_release_columns import Columns
from republish.models.whole_release_counts import (
    BoxExtent,
    ReleaseCounts,
    families,
    rational_weight,
)
from republish.models.whole_release_enumeration import enumerate_columns
from republish.models.whole_release_master import IncrementalMaster


def all_columns(seed: int, m: int) -> tuple[Columns, np.ndarray]:
    problem, groups = random_release(seed, m)
    counts = ReleaseCounts.of(problem)
    fams = families(problem, counts, 10)
    width = max(2 * m - 1, *counts.signature_size.tolist(), *map(len, groups))
    columns = Columns(problem, counts, BoxExtent(problem.points), Fraction(1), 10, width)
    for family in fams:
        found = enumerate_columns(problem, family, limit=200_000)
        assert found is not None
        columns.add(found)
    start = columns.add(np.vstack([np.pad(g, (0, width - len(g)), constant_values=-1)
                                   for g in groups]))
    return columns, start


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3))
def test_a_partial_master_bounds_every_column_and_pricing_reaches_the_full_lp(
        seed: int, m: int) -> None:
    columns, start = all_columns(seed, m)
    radius = np.full(len(columns.problem.values), np.inf)
    master = columns.master(radius)
    full = relax(master, 10.0)
    assert full is not None
    rng = np.random.default_rng(seed)
    some = np.union1d(start, rng.choice(len(master.cost), size=min(5, len(master.cost)),
                                        replace=False))
    lp = IncrementalMaster(master, some)
    relaxed = lp.relax(master, 10.0, add=np.zeros(0, np.int64))
    assert relaxed is not None and len(relaxed.x) == len(master.cost)
    assert relaxed.bound <= full.bound + 1e-6  # a Lagrangian bound over every column
    assert not relaxed.x[~lp.loaded].any()
    for _ in range(len(master.cost)):
        negative = np.flatnonzero((relaxed.rc < -1e-9) & ~lp.loaded)
        if not len(negative):
            break
        relaxed = lp.relax(master, 10.0, add=negative)
        assert relaxed is not None
    assert relaxed.bound == pytest.approx(full.bound, abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3))
def test_the_pooled_lp_proves_what_the_full_lp_proves(seed: int, m: int) -> None:
    """Every column is enumerated on these releases: with POOL_COLUMNS = 1 the LP starts
    from a few columns per row and prices the others from their reduced costs."""
    problem, groups = random_release(seed, m)
    answers = []
    saved = whole_release_columns.POOL_COLUMNS
    try:
        for pool in (10**9, 1):
            whole_release_columns.POOL_COLUMNS = pool
            answers.append(solve_whole_release(problem, time_limit=10.0, hint=(groups, []),
                                               seed=0))
    finally:
        whole_release_columns.POOL_COLUMNS = saved
    plain, pooled = answers
    if "all columns" in pooled.detail:
        assert "LP priced from the enumerated columns" in pooled.detail
    assert pooled.objective_a == plain.objective_a
    assert pooled.bound_b <= pooled.objective_b + 1e-9
    if plain.status_b == pooled.status_b == "OPTIMAL":
        assert pooled.objective_b == pytest.approx(plain.objective_b, abs=1e-7)


def lp_with_cuts(master, hits: list[np.ndarray]) -> float:  # type: ignore[no-untyped-def]
    """The LP over every column of ``master`` with the cuts ``Σ_{c∈H} x_c <= 1``, built at
    once (model_builder, GLOP)."""
    from ortools.linear_solver.python import model_builder

    from republish.models.whole_release_bound import partition_model
    model, x, _, _ = partition_model(master, np.arange(len(master.cost)), integral=False)
    for hit in hits:
        model.add(model_builder.LinearExpr.sum([x[c] for c in hit.tolist()]) <= 1)
    solver = model_builder.Solver("glop")
    assert solver.solve(model) == model_builder.SolveStatus.OPTIMAL
    return float(solver.objective_value)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3))
def test_cuts_added_before_and_after_their_columns_give_the_lp_with_the_cuts(
        seed: int, m: int) -> None:
    """Cuts on random sets of columns (each holding at most one of the start's), the first
    added while most columns are missing:
    columns entering later must join the cuts that hold them. The LP value then equals the
    LP built at once with the cuts, and the Lagrangian bound (with the cut duals) stays
    below it."""
    columns, start = all_columns(seed, m)
    master = columns.master(np.full(len(columns.problem.values), np.inf))
    rng = np.random.default_rng(seed)
    # each cut holds at most one of the start's columns, so the start stays a solution and
    # every LP below is feasible (a random cut could cut off every solution)
    others = np.setdiff1d(np.arange(len(master.cost)), start)
    hits = [np.sort(np.concatenate([
        rng.choice(others, size=min(len(others), int(rng.integers(1, 7))), replace=False),
        rng.choice(start, size=int(rng.integers(0, 2)), replace=False)])) for _ in range(3)]
    lp = IncrementalMaster(master, start)
    lp.add_cut(hits[0])
    first = lp.relax(master, 10.0, add=np.zeros(0, np.int64))
    assert first is not None
    for hit in hits[1:]:
        lp.add_cut(hit)
    relaxed = lp.relax(master, 10.0)  # every column enters, after the cuts
    assert relaxed is not None and len(relaxed.sigma) == 3
    assert (relaxed.sigma <= 0).all()
    assert relaxed.bound <= lp_with_cuts(master, hits) + 1e-6
    value = float(master.cost @ relaxed.x)
    assert value == pytest.approx(lp_with_cuts(master, hits), abs=1e-6)
    # at the LP's optimum over every column no reduced cost is negative, and the bound is
    # the LP's value (strong duality): a cut dual left out of rc or bound breaks this
    assert relaxed.rc.min() >= -1e-7
    assert relaxed.bound == pytest.approx(value, abs=1e-6)


@pytest.mark.parametrize(("previous", "value", "before", "bound", "expected"), [
    (100.0, 100.0, 50.0, 50.0, 3),  # neither moved: one more stalled round
    (100.0, 100.0, 50.0, 60.0, 0),  # a degenerate LP whose Lagrangian bound rises
    (100.0, 99.0, 50.0, 50.0, 0),  # the LP's value moved
    (100.0, 100.0, float("-inf"), float("-inf"), 3),  # no complete round: nothing rose
    (100.0, 100.0, float("-inf"), 40.0, 0),  # the first bound is a rise
])
def test_column_generation_stalls_only_when_value_and_bound_both_stay(
        previous: float, value: float, before: float, bound: float, expected: int) -> None:
    assert whole_release_columns.stalled_rounds(2, previous, value, before, bound) == expected


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 4), deferrals=st.booleans(),
       weight=st.sampled_from([0.5, 1.0, 2.5]))
def test_no_release_holds_more_groups_than_most_groups(seed: int, m: int, deferrals: bool,
                                                       weight: float) -> None:
    """Any release whose (a) is within stage 2's right-hand side (as
    models/whole_release.py sets it from the optimal (a)) has at most ``most_groups``
    groups: the bound behind the solution's least reduced cost."""
    problem, groups = random_release(seed, m)
    problem = dataclasses.replace(problem, allow_deferrals=deferrals, deferral_weight=weight)
    counts = ReleaseCounts.of(problem)
    p_q = rational_weight(weight)
    counterfeits, _ = cost(problem, groups)
    new = int(counts.is_new.sum())
    rhs = counterfeits * p_q.denominator - (p_q.numerator * new if deferrals else 0)
    width = max(2 * m - 1, *counts.signature_size.tolist(), *map(len, groups))
    columns = Columns(problem, counts, BoxExtent(problem.points), p_q, rhs, width)
    chosen = columns.add(np.vstack([np.pad(g, (0, width - len(g)), constant_values=-1)
                                    for g in groups]))
    assert int(columns.a_coef[chosen].sum()) <= rhs  # the release meets the (a) row
    assert len(groups) <= columns.most_groups()


def test_most_groups_is_tight_on_groups_of_m_rows() -> None:
    """No counterfeit, every group of exactly m rows: the bound is the number of groups."""
    for m, k in ((2, 5), (3, 7), (4, 3)):
        n = m * k
        problem = WholeReleaseProblem(np.random.default_rng(m).random((n, 2)),
                                      np.tile(np.arange(m), k), np.full(n, -1), (), m, m)
        columns = Columns(problem, ReleaseCounts.of(problem), BoxExtent(problem.points),
                          Fraction(1), 0, 2 * m - 1)
        assert columns.most_groups() == k


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-50.0, 0.0), min_size=0, max_size=12), st.integers(0, 14),
       st.sampled_from([0.0, 0.25, 0.5, 0.999]))
def test_least_of_solution_is_the_worst_choice_of_that_many_anchors(
        least: list[float], groups: int, fraction: float) -> None:
    """Integral: the worst set of at most ``groups`` anchors (brute force); fractional:
    the LP ``min Σ least_a·t_a``, ``0 <= t <= 1``, ``Σ t <= groups`` (GLOP)."""
    per_anchor = np.array(least, dtype=np.float64)
    worst = min((sum(c) for k in range(min(groups, len(least)) + 1)
                 for c in itertools.combinations(least, k)), default=0.0)
    assert whole_release_columns.least_of_solution(per_anchor, groups) == pytest.approx(
        worst, abs=1e-9)
    solver = pywraplp.Solver.CreateSolver("GLOP")
    t = [solver.NumVar(0.0, 1.0, "") for _ in least]
    solver.Add(solver.Sum(t) <= groups + fraction)
    solver.Minimize(solver.Sum([a * x for a, x in zip(least, t, strict=True)]))
    assert solver.Solve() == pywraplp.Solver.OPTIMAL
    assert whole_release_columns.least_of_solution(per_anchor, groups + fraction) == \
        pytest.approx(solver.Objective().Value(), abs=1e-7)
    with pytest.raises(ValueError, match="groups"):
        whole_release_columns.least_of_solution(per_anchor, -1)
    # an anchor the round could not price (-inf) makes the bound -inf, never nan
    unpriced = np.append(per_anchor, [-np.inf, -np.inf])
    for g in (groups, groups + fraction):
        assert whole_release_columns.least_of_solution(unpriced, g) == (
            -np.inf if g > 0 else 0.0)
