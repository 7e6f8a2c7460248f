"""Reserve deferrals (issue 19, item 1 (ii); :mod:`republish.heuristics.reserve_deferral`):
count-level properties, and a short series with the benchmark hook that must verify
m-invariant at every release."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from republish.datasets import dynamic_series, synthetic_census
from republish.errors import InputError, ParameterError
from republish.heuristics.reserve_deferral import (
    DemandTracker,
    eligibility_gap,
    rare_values,
    reserve_rows,
)
from republish.solver.m_invariance import publish_m_invariant

VALUES = [f"v{i}" for i in range(6)]
counts_strategy = st.dictionaries(st.sampled_from(VALUES), st.integers(0, 12), max_size=6)


def _eligible(counts: dict[str, int], m: int) -> bool:
    present = [c for c in counts.values() if c > 0]
    return not present or (len(present) >= m and all(m * c <= sum(present) for c in present))


def _compositions(total: int, parts: int):  # type: ignore[no-untyped-def]
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


@settings(max_examples=100, deadline=None)
@given(counts=st.dictionaries(st.sampled_from(VALUES), st.integers(0, 4), max_size=6),
       m=st.integers(2, 3))
def test_eligibility_gap_is_the_fewest_added_rows(counts: dict[str, int], m: int) -> None:
    """Brute force: the smallest number of rows added over a domain of 6 values."""
    full = {v: counts.get(v, 0) for v in VALUES}
    best = next(
        total for total in itertools.count()
        if any(_eligible({v: full[v] + x for v, x in zip(VALUES, extra, strict=True)}, m)
               for extra in _compositions(total, len(VALUES)))
    )
    assert eligibility_gap(counts, m) == best


@settings(max_examples=200, deadline=None)
@given(leftover=counts_strategy, targets=counts_strategy, m=st.integers(2, 5))
def test_reserve_keeps_the_rest_no_harder_to_make_eligible(
    leftover: dict[str, int], targets: dict[str, int], m: int
) -> None:
    held = reserve_rows(leftover, targets, m)
    rest = {v: leftover.get(v, 0) - held.get(v, 0) for v in VALUES}
    assert all(0 < h <= min(targets[v], leftover[v]) for v, h in held.items())
    assert eligibility_gap(rest, m) <= eligibility_gap(leftover, m)
    if _eligible(leftover, m):
        assert _eligible(rest, m)


def test_reserve_takes_all_it_may_when_the_rest_stays_eligible() -> None:
    leftover = {f"v{i}": 10 for i in range(10)}
    assert reserve_rows(leftover, {"v0": 3, "v1": 20}, 5) == {"v1": 10, "v0": 3}
    # six values of 2 rows, m = 5: v0 may go, then any row of v1 breaks 5-eligibility
    assert reserve_rows({f"v{i}": 2 for i in range(6)}, {"v0": 9, "v1": 9}, 5) == {"v0": 2}
    # a non-eligible leftover: holding every row of its top value lowers the gap 16 -> 1
    assert reserve_rows({"v0": 5, "v1": 1, "v2": 1, "v3": 1, "v4": 1}, {"v0": 9}, 5) == {"v0": 5}


def test_demand_tracker_targets() -> None:
    tracker = DemandTracker(factor=2.0, smoothing=0.5)
    tracker.update({"a": 100, "b": 0})
    assert tracker.targets() == {"a": 20}
    tracker.update({"b": 36})
    assert tracker.demand == {"a": 50.0, "b": 18.0}
    assert tracker.targets() == {"a": 15, "b": 9}
    assert tracker.targets(hold_all={"c"}, unbounded=99) == {"a": 15, "b": 9, "c": 99}
    with pytest.raises(ParameterError):
        DemandTracker(smoothing=0.0)
    with pytest.raises(InputError):
        tracker.update({"a": -1})


def test_rare_values() -> None:
    counts = {"a": 9_000, "b": 990, "c": 10}
    # 500 new rows: b expects 49.5, c 0.5 (< 2)
    assert rare_values(counts, 500, 2.0) == {"c"}
    assert rare_values(counts, 500, 0.0) == set()
    assert rare_values({}, 500, 2.0) == set()


def test_reserve_policy_series_verifies_and_defers() -> None:
    """The benchmark hook around the product's phases: every release is verified
    m-invariant by the release step, rows are held back, and held rows come back as new
    rows of the next release (published there or held again)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from m_invariance_common import run_series  # noqa: PLC0415

    table, schema = synthetic_census(6000, seed=3, sensitive_distribution="adult-occupation-50")
    records = run_series(table, schema, 2000, 200, 4, seed=3, policy="reserve",
                         max_releases=8, reserve_factor=3.0)
    assert len(records) == 8
    assert sum(int(r["deferred"]) for r in records) > 0  # type: ignore[call-overload]
    for before, after in itertools.pairwise(records):
        # new rows of release j+1 = fresh insertions + the rows held back at j not deleted
        assert int(after["new"]) >= 200  # type: ignore[call-overload]
        assert int(after["new"]) <= 200 + int(before["deferred"])  # type: ignore[call-overload]


def test_hook_releases_verify_with_rows_held_back() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from m_invariance_common import PhaseHook  # noqa: PLC0415

    table, schema = synthetic_census(3000, seed=5, sensitive_distribution="census")
    hook = PhaseHook(DemandTracker(factor=3.0, smoothing=1.0))
    state, rng = None, np.random.default_rng(5)
    held_total = 0
    for number, microdata in enumerate(dynamic_series(table, 1000, 100, 6, seed=5), start=1):
        hook.number, hook.release = number, {}
        with hook.installed():
            result = publish_m_invariant(microdata, schema, 3, state, rng=rng, validated=True,
                                         mode="heuristic", assign="reuse")
        assert result.report.ok
        held_total += hook.release.get("held", 0)
        assert result.deferred >= hook.release.get("held", 0)
        assert result.rows == len(microdata)
        state = result.state
    assert held_total > 0
