"""Slot trades under the release's own extent with hierarchy QIs (tabulated,
models/whole_release_extent_tables.py), nearness on the extent's scale, and windows that
grow when the trades stall: still valid, every group keeps its signature and counterfeits,
(b) never worse under the cost's own (untabulated) extent, and a local optimum for
single-value swaps when the window grows to every holder."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_whole_release_slots import assert_no_improving_swap, random_release

from republish.models.whole_release import WholeReleaseProblem, group_signature, release_problems
from republish.models.whole_release_counts import BoxExtent
from republish.models.whole_release_extent_tables import (
    TabulatedExtent,
    box_point_lengths,
    tabulated,
    unit_points,
)
from republish.models.whole_release_slots import trade_slots
from republish.objectives import ReleaseCost
from republish.schema import Hierarchy, QIAttribute, Schema

HIERARCHY = Hierarchy.from_rows([["a", "ab", "*"], ["b", "ab", "*"], ["c", "cd", "*"],
                                 ["d", "cd", "*"], ["e", "e", "*"]])
SCHEMA = Schema("id", "sa", (QIAttribute("x", "numeric"),
                             QIAttribute("h", "hierarchy", hierarchy=HIERARCHY)))


def with_hierarchy(problem: WholeReleaseProblem, seed: int) -> tuple[WholeReleaseProblem,
                                                                     ReleaseCost]:
    """The same release with a numeric and a hierarchy QI (leaf codes 0-4)."""
    rng = np.random.default_rng(seed)
    n = len(problem.values)
    codes = np.column_stack([rng.integers(0, 30, n), rng.integers(0, 5, n)]).astype(float)
    cost = ReleaseCost.of(SCHEMA, codes)
    return dataclasses.replace(problem, points=cost.points), cost


def perimeter(problem: WholeReleaseProblem, cost: ReleaseCost, groups: list[np.ndarray]
              ) -> tuple[int, float]:
    """(counterfeits, (b)) with the cost's own extent, not the tabulated one."""
    sigmas = [group_signature(problem, g) for g in groups]
    return (sum(len(s) - len(g) for s, g in zip(sigmas, groups, strict=True)),
            sum(len(s) * cost.extent(g) for s, g in zip(sigmas, groups, strict=True)))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), rows=st.integers(1, 12), k=st.integers(1, 6))
def test_tabulated_extent_equals_the_costs_extent(seed: int, rows: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, 30, rows), rng.integers(0, 5, rows)]).astype(float)
    cost = ReleaseCost.of(SCHEMA, codes)
    table = tabulated(cost.model_extent(lambda r: 0))
    assert isinstance(table, TabulatedExtent)
    members = rng.integers(-1, rows, size=(k, 3))
    members[:, 0] = rng.integers(0, rows, size=k)  # every group holds a row
    assert np.array_equal(table.batch(members), cost.batch(members))
    picked = rng.integers(0, rows, size=4)
    assert np.array_equal(table.joined(members, picked), cost.joined(members, picked))
    assert np.array_equal(table.pairwise(picked, picked), cost.pairwise(picked, picked))
    for member in members:
        assert table(member[member >= 0]) == cost.extent(member[member >= 0])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), rows=st.integers(1, 12))
def test_box_point_lengths_are_the_costs_lengths_of_the_same_rows(seed: int, rows: int) -> None:
    """Pricing prunes by these on box points (leaf codes over ``leaves - 1``): they are the
    cost's own lengths of the rows' box, at least the box points' widths."""
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, 30, rows), rng.integers(0, 5, rows)]).astype(float)
    cost = ReleaseCost.of(SCHEMA, codes)
    points = cost.box_points()
    lengths = box_point_lengths(cost.model_extent(lambda r: 0))
    assert points is not None and lengths is not None
    for _ in range(5):
        chosen = rng.choice(rows, size=rng.integers(1, rows + 1), replace=False)
        on_box = lengths(points[chosen].min(axis=0), points[chosen].max(axis=0))
        own = cost.lengths(cost.points[chosen].min(axis=0), cost.points[chosen].max(axis=0))
        assert np.allclose(on_box, own)
        assert (on_box >= np.ptp(points[chosen], axis=0) - 1e-12).all()
    assert box_point_lengths(BoxExtent(cost.points)) is None


def test_other_measures_are_not_tabulated() -> None:
    box = BoxExtent(np.zeros((2, 2)))
    assert tabulated(box) is box
    cost = ReleaseCost.of(SCHEMA, np.zeros((2, 2)), "ncp")
    ncp = cost.model_extent(lambda r: 1)
    assert tabulated(ncp) is ncp


def test_unit_points_put_leaf_codes_on_the_extents_scale() -> None:
    codes = np.array([[0.0, 0.0], [30.0, 4.0]])
    cost = ReleaseCost.of(SCHEMA, codes)
    scaled = unit_points(cost.points, tabulated(cost.model_extent(lambda r: 0)))
    assert np.allclose(scaled, [[0.0, 0.0], [1.0, 1.0]])  # 5 leaves: codes / 4
    assert unit_points(cost.points, BoxExtent(cost.points)) is cost.points


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3), new_counterfeits=st.booleans(),
       window=st.integers(2, 4))
def test_trades_under_a_hierarchy_extent_keep_the_release_and_never_worsen(
        seed: int, m: int, new_counterfeits: bool, window: int) -> None:
    problem, start = random_release(seed, m, new_counterfeits)
    problem, cost = with_hierarchy(problem, seed)
    found = trade_slots(problem, start, deadline=time.perf_counter() + 5.0, seed=seed,
                        extent=cost.model_extent(lambda r: 0), groups_per_move=window,
                        patience=40, max_groups_per_move=2 * window)
    groups = list(found.groups)
    assert release_problems(problem, groups, np.zeros(0, np.int64)) == []
    assert [group_signature(problem, g) for g in groups] == \
        [group_signature(problem, g) for g in start]
    assert [sorted(problem.values[g].tolist()) for g in groups] == \
        [sorted(problem.values[g].tolist()) for g in start]
    before, after = perimeter(problem, cost, start), perimeter(problem, cost, groups)
    assert after[0] == before[0]
    assert after[1] <= before[1] + 1e-9
    assert abs((before[1] - after[1]) - found.gain) < 1e-6


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3))
def test_a_window_that_grows_to_every_holder_ends_at_a_local_optimum(seed: int, m: int) -> None:
    """Started with windows of 2 groups that double when the trades stall, up to every
    group: no allowed swap of two rows of one value lowers (b) at the end."""
    problem, start = random_release(seed, m)
    problem, cost = with_hierarchy(problem, seed)
    found = trade_slots(problem, start, deadline=time.perf_counter() + 5.0, seed=seed,
                        extent=cost.model_extent(lambda r: 0), groups_per_move=2,
                        patience=400, max_groups_per_move=max(2, len(start)))
    assert_no_improving_swap(problem, list(found.groups),
                             lambda g: perimeter(problem, cost, g)[1])
