"""Signature-size-2 pairing: exact pricers and the priced min-cost flow against a dense
assignment of the complete graph."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.graph.python import linear_sum_assignment

from republish.models.grouping.pairs import match_pairs
from republish.models.grouping.pricing import GridPricing, LeafPricing, Priced


def _codes(rng: np.random.Generator, n: int, d: int, levels: int) -> np.ndarray:
    """Integer codes on ``levels`` unevenly spaced positions per QI (ties when few)."""
    positions = np.sort(rng.choice(10_000, size=(d, levels), replace=False), axis=1)
    return np.stack([positions[j][rng.integers(0, levels, n)] for j in range(d)], axis=1)


def _dense(qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    return np.abs(qa[:, None, :] - qb[None, :, :]).sum(axis=2)


def _check_priced(priced: Priced, cost: np.ndarray, u: np.ndarray, v: np.ndarray) -> None:
    reduced = cost - u[:, None] - v[None, :]
    assert np.array_equal(priced.u_lowered, np.minimum(u, (cost - v[None, :]).min(axis=1)))
    assert np.array_equal(priced.v_lowered, np.minimum(v, (cost - u[:, None]).min(axis=0)))
    assert (reduced[priced.tails, priced.heads] < 0).all()
    # Every row and every column with a negative arc gets at least one.
    assert set(np.flatnonzero((reduced < 0).any(axis=1))) <= set(priced.tails.tolist())
    assert set(np.flatnonzero((reduced < 0).any(axis=0))) <= set(priced.heads.tolist())


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 4), levels=st.integers(2, 9),
       na=st.integers(1, 40), nb=st.integers(1, 40))
def test_pricers_find_every_negative_row_and_the_exact_lowered_duals(
    seed: int, d: int, levels: int, na: int, nb: int
) -> None:
    rng = np.random.default_rng(seed)
    qa = np.unique(_codes(rng, na, d, levels), axis=0)
    qb = np.unique(_codes(rng, nb, d, levels), axis=0)
    cost = _dense(qa, qb)
    # Duals around the true costs, so that some arcs are negative and some are not.
    u = rng.integers(0, int(cost.max()) + 2, len(qa)).astype(np.int64)
    v = rng.integers(-int(cost.max()) - 1, int(cost.max()) + 1, len(qb)).astype(np.int64)
    grid = GridPricing.plan(qa, qb)
    assert grid is not None  # tiny instances always fit the grid budget
    _check_priced(grid.price(u, v), cost, u, v)
    _check_priced(LeafPricing(qa, qb).price(u, v), cost, u, v)


def _assignment_optimum(qa: np.ndarray, qb: np.ndarray, fake_a: int, fake_b: int) -> int:
    """Complete bipartite assignment: A rows and ``fake_a`` counterfeit slots on the left,
    B rows and ``fake_b`` slots on the right; no counterfeit-counterfeit pair."""
    solver = linear_sum_assignment.SimpleLinearSumAssignment()
    cost = _dense(qa, qb)
    left, right = len(qa) + fake_a, len(qb) + fake_b
    assert left == right
    for i in range(left):
        for j in range(right):
            real_i, real_j = i < len(qa), j < len(qb)
            if real_i and real_j:
                solver.add_arc_with_cost(i, j, int(cost[i, j]))
            elif real_i or real_j:
                solver.add_arc_with_cost(i, j, 0)
    assert solver.solve() == solver.OPTIMAL
    return int(solver.optimal_cost())


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 3), levels=st.integers(2, 6),
       pairs=st.integers(1, 25), fake_a=st.integers(0, 4), fake_b=st.integers(0, 4))
def test_priced_flow_equals_the_dense_assignment(
    seed: int, d: int, levels: int, pairs: int, fake_a: int, fake_b: int
) -> None:
    rng = np.random.default_rng(seed)
    qa = _codes(rng, pairs + fake_b, d, levels)
    qb = _codes(rng, pairs + fake_a, d, levels)
    result = match_pairs(qa, qb, fake_a, fake_b, time_limit=30.0)
    assert result.optimal
    assert result.cost == result.bound == _assignment_optimum(qa, qb, fake_a, fake_b)
    matched = result.partner[result.partner >= 0]
    assert len(matched) == pairs and len(set(matched.tolist())) == pairs
    assert result.cost == _dense(qa, qb)[result.partner >= 0, matched].sum()


@pytest.mark.parametrize("discrete", [True, False])
def test_a_stopped_solve_bounds_the_true_optimum(discrete: bool) -> None:
    rng = np.random.default_rng(11)
    n = 400
    qa = _codes(rng, n, 3, 6) if discrete else rng.integers(0, 10**5, (n, 3))
    qb = _codes(rng, n - 3, 3, 6) if discrete else rng.integers(0, 10**5, (n - 3, 3))
    optimum = _assignment_optimum(qa, qb, 0, 3)
    stopped = match_pairs(qa, qb, 0, 3, time_limit=1e-6)
    assert stopped.bound <= optimum <= stopped.cost
    assert match_pairs(qa, qb, 0, 3, time_limit=30.0).cost == optimum


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 3), levels=st.integers(2, 6),
       pairs=st.integers(1, 30), fake_a=st.integers(0, 6), fake_b=st.integers(0, 6))
def test_the_bound_after_one_round_is_below_the_optimum(
    seed: int, d: int, levels: int, pairs: int, fake_a: int, fake_b: int
) -> None:
    rng = np.random.default_rng(seed)
    qa = _codes(rng, pairs + fake_b, d, levels)
    qb = _codes(rng, pairs + fake_a, d, levels)
    stopped = match_pairs(qa, qb, fake_a, fake_b, time_limit=1e-9)
    assert stopped.rounds == 1
    assert stopped.bound <= _assignment_optimum(qa, qb, fake_a, fake_b) <= stopped.cost
