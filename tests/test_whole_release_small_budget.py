"""The time rules of small releases whose columns are all tabled (models/whole_release.py,
models/whole_release_columns.py, models/whole_release_fixing.py): stage 2 keeps the whole
budget, the cycle-cover bound is left out where stage 2's bound stands, and a small fixed
pool goes to SCIP past the per-second rule."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from republish.models import whole_release, whole_release_fixing
from republish.models.whole_release import WholeReleaseProblem, solve_whole_release
from republish.models.whole_release_restricted import PoolFixing


def first_release(seed: int, n: int, m: int) -> WholeReleaseProblem:
    rng = np.random.default_rng(seed)
    domain = m + int(rng.integers(0, 3))
    values = np.arange(n) % domain
    return WholeReleaseProblem(rng.random((n, 2)), rng.permutation(values), np.full(n, -1),
                               (), m, domain)


def spy_stage2(monkeypatch: pytest.MonkeyPatch, unproven: bool = False) -> list[float]:
    """Record stage 2's time limit and when it was called; with ``unproven`` its answer
    loses its proof (same groups, status FEASIBLE) so the final bounds run."""
    limits: list[float] = []
    real = whole_release.stage2

    def stage2(*args: Any, **kwargs: Any) -> Any:
        limits.extend([args[5], whole_release.time.perf_counter()])
        result = real(*args, **kwargs)
        if unproven:
            result.status = "FEASIBLE"
        return result

    monkeypatch.setattr(whole_release, "stage2", stage2)
    return limits


def spy_cycle_cover(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = whole_release.cycle_cover_bound

    def cycle_cover(*args: Any, **kwargs: Any) -> float:
        calls.append(1)
        return float(real(*args, **kwargs))

    monkeypatch.setattr(whole_release, "cycle_cover_bound", cycle_cover)
    return calls


@pytest.mark.parametrize("tabled", [True, False])
def test_stage2_keeps_the_bounds_reserve_only_without_a_full_table(
        tabled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = first_release(5, 24, 2)
    if not tabled:
        monkeypatch.setattr(whole_release, "TABLE_COLUMNS", 0)
    limits = spy_stage2(monkeypatch)
    started = whole_release.time.perf_counter()
    solution = solve_whole_release(problem, time_limit=4.0)
    assert solution.status_b == "OPTIMAL"
    assert ("every column tabled" in solution.detail) == tabled
    reserve = min(whole_release.BOUNDS_RESERVE * 4.0, whole_release.BOUNDS_RESERVE_SECONDS)
    assert reserve == pytest.approx(0.2)
    # stage 2's limit is the budget left when it is called, net of the reserve only
    # without the table (the call's own start is a little after `started`)
    limit, called = limits
    left = 4.0 - (called - started)
    expected = left - (0.0 if tabled else reserve)
    assert expected - 1e-9 <= limit <= expected + 0.05


@pytest.mark.parametrize(("tabled", "relaxed"), [(True, False), (False, False),
                                                 (False, True)])
def test_cycle_cover_bound_left_out_where_every_column_priced_the_bound(
        tabled: bool, relaxed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unproven answer (stage 2's proof removed) gets the cycle-cover bound only when
    some column was not in the table and no m-row relaxation bounded the release here;
    its bound is stage 2's either way (at least), and the relaxation's."""
    problem = first_release(5, 24, 2)
    if not tabled:
        monkeypatch.setattr(whole_release, "TABLE_COLUMNS", 0)
    if not relaxed:
        monkeypatch.setattr(whole_release, "planned_size", lambda *args: None)
    spy_stage2(monkeypatch, unproven=True)
    calls = spy_cycle_cover(monkeypatch)
    solution = solve_whole_release(problem, time_limit=4.0)
    assert solution.status_b == "FEASIBLE"
    assert solution.bound_b > 0.0
    assert solution.bound_b <= solution.objective_b + 1e-9
    assert ("m-row relaxation" in solution.detail) == relaxed
    assert len(calls) == (1 if not tabled and not relaxed else 0)


def test_small_fixed_pool_goes_to_scip_past_the_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a per-second rate that refuses every pool, a pool of at most SMALL_POOL
    columns is still solved (and proves the release); without SMALL_POOL it is refused.
    The pool fixing, which would otherwise prove first, finds nothing here."""
    monkeypatch.setattr(whole_release_fixing, "fix_by_pool", lambda *a, **k: PoolFixing(
        False, None, math.inf, 0))
    monkeypatch.setattr(whole_release_fixing, "FIXING_COLUMNS_PER_SECOND", 1e-9)
    problem = first_release(2, 40, 2)
    solution = solve_whole_release(problem, time_limit=5.0)
    assert "columns left by reduced-cost fixing" in solution.detail
    assert solution.status_b == "OPTIMAL"
    monkeypatch.setattr(whole_release_fixing, "SMALL_POOL", 0)
    refused = solve_whole_release(problem, time_limit=5.0)
    assert "too many for the time left" in refused.detail
    assert refused.objective_b >= solution.objective_b - 1e-9


@pytest.mark.parametrize("seed", range(3))
def test_wider_pool_takes_the_time_the_fixing_cannot_use(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where reduced-cost fixing leaves too many columns (a pool limit of 1), the rest of
    the budget goes to SCIP over a wider pool of least reduced cost: its release is never
    worse than the restricted search's, and a proof it claims is the true optimum."""
    problem = first_release(seed, 30, 2)
    optimum = solve_whole_release(problem, time_limit=10.0)
    assert optimum.status_b == "OPTIMAL"
    real = whole_release_fixing.fix_by_pool
    sizes: list[int] = []
    failing = [True]

    def fix_by_pool(*args: Any, **kwargs: Any) -> PoolFixing:
        sizes.append(args[5])
        if failing[0]:  # each release's restricted search finds nothing
            failing[0] = False
            return PoolFixing(False, None, math.inf, 0)
        return real(*args, **kwargs)

    monkeypatch.setattr(whole_release_fixing, "fix_by_pool", fix_by_pool)
    monkeypatch.setattr(whole_release_fixing, "CUT_POOL_COLUMNS", 1)
    monkeypatch.setattr(whole_release_fixing, "CUT_POOL_PER_SECOND", 0.0)
    solution = solve_whole_release(problem, time_limit=5.0, max_columns=1)
    assert "fixing too large; then SCIP on the" in solution.detail
    assert sizes[1] == whole_release_fixing.WIDER_POOL * sizes[0]
    assert solution.objective_b >= optimum.objective_b - 1e-9
    if solution.status_b == "OPTIMAL":
        assert solution.objective_b == pytest.approx(optimum.objective_b, abs=1e-9)
    monkeypatch.setattr(whole_release_fixing, "WIDER_POOL_SECONDS", math.inf)
    failing[0] = True
    refused = solve_whole_release(problem, time_limit=5.0, max_columns=1)
    assert "then SCIP" not in refused.detail and "fixing too large" in refused.detail
    assert len(sizes) == 3  # no wider pool without the time for it
