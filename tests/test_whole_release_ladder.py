"""The ladder of restricted MIPs (models/whole_release_fixing.py, ``restricted_ladder``):
pools of each row's cheapest columns of each size, from the LP's columns and the table's;
never worse than its start, never below the optimum, and stopped by its rules."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_whole_release_model import random_later_release
from test_whole_release_tables import extension_case, first_release

from republish.datasets import dynamic_series, load_adult
from republish.models import whole_release
from republish.models import whole_release_fixing as fixing
from republish.models.whole_release import solve_whole_release
from republish.models.whole_release_bound import Relaxation, reduced_costs
from republish.models.whole_release_counts import (
    ReleaseCounts,
    count_columns,
    families,
    optimal_counts,
    realize_counts,
)
from republish.models.whole_release_master import IncrementalMaster
from republish.models.whole_release_restricted import is_feasible
from republish.solver.m_invariance import publish_m_invariant


def ladder_case(seed: int) -> tuple[Any, ...]:
    """A first release at m = 3 of 13 rows (a partition needs a group of four), its
    table of triples with the larger groups priced by extension, the LP over each row's
    cheapest tabled columns, and a start found in no time (the count plan's release)."""
    problem, columns, pricer = extension_case(seed)
    columns.add(pricer.start_columns(3))
    groups, late = realize_counts(problem, optimal_counts(problem, time_limit=5.0))
    assert not len(late)
    start = columns.add(np.array([np.pad(g, (0, 5 - len(g)), constant_values=-1)
                                  for g in groups])).tolist()
    master = columns.master(np.full(len(problem.values), -math.inf))
    relaxed = IncrementalMaster(master).relax(master, 10.0)
    assert relaxed is not None
    return problem, columns, pricer, relaxed, start, float(columns.cost[start].sum())


def spy_pools(monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    pools: list[np.ndarray] = []
    real = fixing.solve_restricted

    def solve(master: Any, keep: np.ndarray, *args: Any, **kwargs: Any) -> Any:
        pools.append(np.asarray(keep).copy())
        return real(master, keep, *args, **kwargs)

    monkeypatch.setattr(fixing, "solve_restricted", solve)
    return pools


@pytest.mark.parametrize("seed", range(5))
def test_ladder_is_a_release_between_the_optimum_and_its_start(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    problem, columns, pricer, relaxed, start, start_cost = ladder_case(seed)
    optimum = solve_whole_release(problem, time_limit=20.0)
    assert optimum.status_b == "OPTIMAL"
    pools = spy_pools(monkeypatch)
    best, cost, solved = fixing.restricted_ladder(
        columns, pricer, relaxed, start, start_cost, -math.inf,
        deadline=fixing.time.perf_counter() + 10.0, seed=seed)
    master = columns.master(np.full(len(problem.values), -math.inf))
    assert solved == len(pools) >= 1
    assert is_feasible(master, np.asarray(best))
    assert cost == pytest.approx(float(columns.cost[best].sum()))
    assert optimum.objective_b - 1e-7 <= cost <= start_cost + 1e-9
    # each pool is larger than the last and holds the LP's support; the first the start
    # (the later ones the best release so far)
    assert all(len(a) < len(b) for a, b in zip(pools, pools[1:], strict=False))
    support = set(np.flatnonzero(relaxed.x > 1e-9).tolist())
    assert set(start) <= set(pools[0].tolist())
    assert all(support <= set(pool.tolist()) for pool in pools)


@pytest.mark.parametrize("seed", range(3))
def test_first_pool_holds_each_rows_cheapest_column_of_each_size(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first pool (one per row and size): for every row and every group size, a
    column of that size holding the row with the least reduced cost among the master's
    is in it -- the larger groups included, which a pool of least reduced cost overall
    misses. Under random prices (no LP support, no ties at 0)."""
    problem, columns, pricer, _, start, start_cost = ladder_case(seed)
    y = np.random.default_rng(seed).uniform(0.0, 0.4, len(problem.values))
    relaxed = Relaxation(y, 0.0, y, np.zeros(0), np.zeros(len(columns.cost)), -math.inf,
                         -math.inf)
    (extension,) = pricer.extensions  # the master gets groups of four and five rows
    larger, _, _ = extension.price(columns, relaxed, 100.0)  # every one
    columns.add(larger)
    relaxed = Relaxation(y, 0.0, y, np.zeros(0), np.zeros(len(columns.cost)), -math.inf,
                         -math.inf)
    pools = spy_pools(monkeypatch)
    fixing.restricted_ladder(columns, pricer, relaxed, start, start_cost, -math.inf,
                             deadline=fixing.time.perf_counter() + 10.0, seed=seed)
    master = columns.master(np.full(len(problem.values), -math.inf))
    rc = reduced_costs(master.members, master.cost, master.a_coef, relaxed.y, relaxed.y_a)
    size = (master.members >= 0).sum(axis=1)
    assert (np.bincount(size)[4:] > 20).all()
    first = set(pools[0].tolist())
    for row in range(len(problem.values)):
        for k in np.unique(size).tolist():
            holding = np.flatnonzero((size == k) & (master.members == row).any(axis=1))
            if len(holding):
                least = rc[holding].min()
                assert any(c in first for c in holding[rc[holding] <= least + 1e-12])
    assert len(first) < len(rc)  # a pool, not every column


def test_ladder_stops_near_the_bound_and_when_out_of_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    problem, columns, pricer, relaxed, start, start_cost = ladder_case(1)
    pools = spy_pools(monkeypatch)
    now = fixing.time.perf_counter
    # the start is within LADDER_GAP of the bound: no pool is solved
    assert fixing.restricted_ladder(
        columns, pricer, relaxed, start, start_cost, start_cost / (1 + fixing.LADDER_GAP / 2),
        deadline=now() + 10.0, seed=0) == (start, start_cost, 0)
    # no time for the first pool at LADDER_SECONDS_PER_COLUMN a column
    assert fixing.restricted_ladder(columns, pricer, relaxed, start, start_cost, -math.inf,
                                    deadline=now() + 1e-6, seed=0) == (start, start_cost, 0)
    assert pools == []
    # a later release's gap (LATER_LADDER_GAP = 0): the same start is not close enough,
    # only one the bound meets up to rounding
    _, cost, solved = fixing.restricted_ladder(
        columns, pricer, relaxed, start, start_cost, start_cost / (1 + fixing.LADDER_GAP / 2),
        deadline=now() + 10.0, seed=0, gap=fixing.LATER_LADDER_GAP)
    assert solved == len(pools) >= 1 and cost <= start_cost
    assert fixing.restricted_ladder(
        columns, pricer, relaxed, start, start_cost, start_cost * (1 - 1e-12),
        deadline=now() + 10.0, seed=0, gap=fixing.LATER_LADDER_GAP) == (start, start_cost, 0)
    # a pool fits or not by the rate given
    first = len(pools[0])
    assert fixing.restricted_ladder(
        columns, pricer, relaxed, start, start_cost, -math.inf, deadline=now() + 0.5, seed=0,
        seconds_per_column=1.0 / first)[2] == 0


@pytest.mark.parametrize("seed", range(4))
def test_ladder_runs_only_where_larger_groups_are_priced_by_extension(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stage 2 calls the ladder on a release whose table prices its larger groups by
    extension (unless the LP's own solution is already the answer), and not where the
    table holds every column: there the pool fixing finds and proves the optimum itself
    (m = 2). Either way the release is the enumerated model's optimum."""
    calls: list[int] = []
    real = fixing.restricted_ladder

    def ladder(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fixing, "restricted_ladder", ladder)
    problem = first_release(seed, 13, 3)
    counts = ReleaseCounts.of(problem)
    (family,) = families(problem, counts, 0)
    with monkeypatch.context() as patch:
        patch.setattr(whole_release, "TABLE_COLUMNS", 0)
        enumerated = solve_whole_release(problem, time_limit=20.0)
    patch_triples = count_columns(dataclasses.replace(family, hi=3), counts.is_new)
    monkeypatch.setattr(whole_release, "TABLE_COLUMNS", patch_triples)
    extended = solve_whole_release(problem, time_limit=20.0)
    assert "priced by extending" in extended.detail
    assert extended.status_b == enumerated.status_b == "OPTIMAL"
    assert extended.objective_b == pytest.approx(enumerated.objective_b, abs=1e-9)
    assert calls or "LP bound met" in extended.detail, extended.detail
    calls.clear()
    monkeypatch.setattr(whole_release, "TABLE_COLUMNS", 3_000_000)
    complete = solve_whole_release(first_release(seed, 14, 2), time_limit=20.0)
    assert "every column tabled" in complete.detail and calls == []


@pytest.mark.parametrize("seed", range(3))
def test_searches_after_the_ladder_see_its_columns(seed: int) -> None:
    """Without a fixing bound (no pricing round finished) the restricted search after the
    ladder runs on the master the ladder grew: it still returns a release, between the
    optimum and the start."""
    problem, columns, pricer, relaxed, start, start_cost = ladder_case(seed)
    optimum = solve_whole_release(problem, time_limit=20.0)
    before = len(columns.cost)
    result = fixing.improve_and_prove(
        columns, np.full(len(problem.values), -math.inf), relaxed, None, pricer, start,
        start_cost, -math.inf, "LP", complete=False, limit=10**6, seed=seed,
        started=fixing.time.perf_counter(), time_limit=10.0)
    assert len(columns.cost) > before  # the ladder added the table's cheapest
    master = columns.master(np.full(len(problem.values), -math.inf))
    assert is_feasible(master, np.asarray(result.chosen))
    assert optimum.objective_b - 1e-7 <= result.cost <= start_cost + 1e-9
    assert result.status == "FEASIBLE" and "incumbent by" in result.note


def test_no_anchor_refinement_once_the_row_prices_settle_the_lp(
        adult_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Column generation refines its anchors only after a round whose row-price floor
    left room: the floor bounds every column, so a floor of 0 settles the LP. On a first
    release of 200 Adult rows at m = 3 (the random instances above never leave an anchor
    unsure) the last rounds settle it; refining then only took time."""
    from republish.models import whole_release_tables as tables

    calls: list[tuple[bool, float | None]] = []
    real = tables.TabledPricing.price

    def price(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = self.last_row_floor
        result = real(self, *args, **kwargs)
        refines = kwargs.get("anchors") is not None  # the fixing's call refines all anchors
        calls.append((refines, before if refines else self.last_row_floor))
        return result

    monkeypatch.setattr(tables.TabledPricing, "price", price)
    table, schema = load_adult("occupation", ["age", "sex", "education", "native-country"],
                               directory=adult_dir.parent)
    (microdata,) = dynamic_series(table, 200, 1, 1, 7)
    step = publish_m_invariant(microdata, schema, 3, None, mode="auto", time_limit=5.0,
                               rng=np.random.default_rng(7))
    summary = step.summary()
    assert summary["cost_bound"] <= summary["cost"] + 1e-9
    rounds = [floor for refine, floor in calls if not refine]
    assert len(rounds) >= 3 and all(floor is not None for floor in rounds)
    tolerance = 1e-6 * max(1.0, float(summary["cost_bound"]))
    assert -rounds[-1] <= tolerance  # the rounds end settled (the LP converged)
    for refine, floor in calls:
        if refine:  # the round just before it had room left
            assert floor is not None and floor < -tolerance


def test_table_reduced_costs_kept_for_the_last_duals(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last round's pricing, the ladder and the pool fixing read the table's reduced
    costs under the same duals: computed once per relaxation, equal to a fresh pass."""
    from republish.models import whole_release_tables as tables

    problem, columns, pricer, relaxed, start, start_cost = ladder_case(2)
    passes: list[int] = []
    real = tables.FamilyTable.reduced_costs

    def counted(self: Any, duals: Any) -> np.ndarray:
        passes.append(1)
        return real(self, duals)

    monkeypatch.setattr(tables.FamilyTable, "reduced_costs", counted)
    fresh = real(pricer.table, relaxed)
    assert np.array_equal(pricer.table_reduced_costs(relaxed), fresh)
    # int16 slots (the rows fit): the definition's reduced costs
    table = pricer.table
    assert table.slots.dtype == np.int16
    assert fresh == pytest.approx(reduced_costs(table.members, table.cost, table.a_coef,
                                                relaxed.y, relaxed.y_a), abs=1e-12)
    pricer.price(relaxed, 0.0, 10**6, rc_of=lambda block: np.zeros(len(block)))
    fixing.restricted_ladder(columns, pricer, relaxed, start, start_cost, -math.inf,
                             deadline=fixing.time.perf_counter() + 10.0, seed=0)
    assert passes == [1]
    other = Relaxation(relaxed.y + 0.1, relaxed.y_a, relaxed.pi + 0.1, relaxed.rc, relaxed.x,
                       relaxed.bound, relaxed.bound_radius)
    assert np.array_equal(pricer.table_reduced_costs(other), real(pricer.table, other))
    assert passes == [1, 1]


def test_ladder_runs_on_later_releases_and_its_release_goes_to_the_fixing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With old rows and a table of every column, stage 2 calls the ladder, and once the
    ladder's release is the incumbent, reduced-cost fixing proves it without the pool
    fixing's SCIP run first (which took 3.5 s of a 1 s release on 200 Adult rows). The
    releases are the enumerated model's optima."""
    calls: dict[str, int] = {}
    real_ladder, real_pool = fixing.restricted_ladder, fixing.fix_by_pool

    def ladder(*args: Any, **kwargs: Any) -> Any:
        calls["ladder"] = calls.get("ladder", 0) + 1
        return real_ladder(*args, **kwargs)

    def pool(*args: Any, **kwargs: Any) -> Any:
        calls["pool"] = calls.get("pool", 0) + 1
        return real_pool(*args, **kwargs)

    monkeypatch.setattr(fixing, "restricted_ladder", ladder)
    monkeypatch.setattr(fixing, "fix_by_pool", pool)
    # the start of a first release: from LATER_START_PER_ROW's larger one the LP of seed 8
    # is integral at the first round, and the ladder's release then needs no fixing
    monkeypatch.setattr(whole_release, "LATER_START_PER_ROW", whole_release.POOL_PER_ROW)
    laddered = 0
    for seed in (2, 8, 13, 21):
        problem = random_later_release(seed, buckets=4, domain=5, most_per_value=3, new=14,
                                       grid=12)
        calls.clear()
        tabled = solve_whole_release(problem, time_limit=20.0)
        assert "every column tabled" in tabled.detail
        if "LP bound met" not in tabled.detail:
            assert calls.get("ladder") == 1, tabled.detail
        if "incumbent by ladder" in tabled.detail:
            laddered += 1
            assert "pool" not in calls and "reduced-cost fixing" in tabled.detail
        with monkeypatch.context() as patch:
            patch.setattr(whole_release, "TABLE_COLUMNS", 0)
            enumerated = solve_whole_release(problem, time_limit=20.0)
        assert tabled.status_b == enumerated.status_b == "OPTIMAL"
        assert tabled.objective_b == pytest.approx(enumerated.objective_b, abs=1e-9)
    assert laddered  # seed 8: the ladder's release is the answer
