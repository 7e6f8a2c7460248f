"""The large-release search rebuilds the buckets early where it has room
(models/whole_release_large.py, _trade_share): the first slot trades stop at SLOT_SHARE of
the search, the rebuild follows and the trades go on until the search's end; a search too
short for the rebuild keeps the trades alone until then. A first release's buckets are its
groups of one signature (_signature_buckets)."""

from __future__ import annotations

import re
import time
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_whole_release_new_groups import NO_DEFERRED, across_signatures

import republish.models.whole_release as whole_release
import republish.models.whole_release_large as whole_release_large
from republish.models.whole_release import solve_whole_release
from republish.models.whole_release_answer import release_objectives
from republish.models.whole_release_counts import BoxExtent
from republish.models.whole_release_problem import (
    WholeReleaseProblem,
    group_signature,
    release_problems,
)
from republish.models.whole_release_rebuild import Rebuild, rebuild_buckets


def test_trade_share_needs_room_for_the_rebuild() -> None:
    problem, _ = across_signatures()
    old_rows = int((problem.bucket >= 0).sum())
    assert 0 < old_rows < len(problem.values)
    per_row = whole_release_large.REBUILD_ROOM * whole_release_large.REBUILD_SECONDS_PER_ROW
    assert whole_release_large._trade_share(problem, per_row * old_rows) == \
        whole_release_large.SLOT_SHARE
    assert whole_release_large._trade_share(problem, 0.9 * per_row * old_rows) == 1.0
    # a first release rebuilds its groups of one signature: every row counts
    first = WholeReleaseProblem(problem.points, problem.values,
                                np.full(len(problem.values), -1), (), 3, 6)
    rows = len(first.values)
    assert whole_release_large._trade_share(first, per_row * rows) == \
        whole_release_large.SLOT_SHARE
    assert whole_release_large._trade_share(first, 0.9 * per_row * rows) == 1.0
    assert whole_release_large.SLOT_SHARE < 0.5


def first_release(seed: int, m: int) -> tuple[WholeReleaseProblem, list[np.ndarray]]:
    """A first release of crosswise groups: 2-3 signatures of m values, each with 2-6
    groups of random points, and one group with a counterfeit (m - 1 rows)."""
    rng = np.random.default_rng(seed)
    domain = m + 2
    values: list[int] = []
    groups: list[np.ndarray] = []
    for _ in range(int(rng.integers(2, 4))):
        sigma = rng.choice(domain, size=m, replace=False).tolist()
        for _ in range(int(rng.integers(2, 7))):
            groups.append(np.arange(len(values), len(values) + m))
            values += sigma
    groups.append(np.arange(len(values), len(values) + m - 1))
    values += rng.choice(domain, size=m - 1, replace=False).tolist()
    problem = WholeReleaseProblem(rng.random((len(values), 2)), np.array(values),
                                  np.full(len(values), -1), (), m, domain,
                                  counterfeits_in_new_groups=True)
    return problem, groups


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.integers(2, 3))
def test_a_first_release_is_rebuilt_by_signature(seed: int, m: int) -> None:
    """Groups of one signature are the buckets of the rebuild; the rebuilt release is
    valid, every group keeps its signature (so the signatures' counts stay), the group
    with a counterfeit stays as it is, and (b) never rises."""
    problem, groups = first_release(seed, m)
    assert release_problems(problem, groups, NO_DEFERRED) == []
    buckets = whole_release_large._signature_buckets(problem, groups)
    assert (buckets.bucket[groups[-1]] == -1).all()  # the counterfeit's group stays out
    assert (buckets.bucket[np.concatenate(groups[:-1])] >= 0).all()
    extent = BoxExtent(problem.points)
    rebuilt = rebuild_buckets(buckets, groups, deadline=time.perf_counter() + 10.0,
                              extent=extent)
    assert release_problems(problem, list(rebuilt.groups), NO_DEFERRED) == []
    before = Counter(group_signature(problem, np.asarray(g)) for g in groups)
    after = Counter(group_signature(problem, np.asarray(g)) for g in rebuilt.groups)
    assert before == after
    assert any(np.array_equal(np.sort(g), groups[-1]) for g in rebuilt.groups)
    cost_before = release_objectives(problem, groups, 0, Fraction(1), extent)[1]
    cost_after = release_objectives(problem, list(rebuilt.groups), 0, Fraction(1), extent)[1]
    assert cost_after <= cost_before + 1e-9
    if rebuilt.rebuilt:
        assert cost_after < cost_before


def test_crosswise_first_release_groups_are_rebuilt() -> None:
    """Two groups of one signature, each holding one row of each of two far clusters: the
    rebuild pairs the rows within their clusters."""
    points = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    problem = WholeReleaseProblem(points, np.array([0, 1, 0, 1]), np.full(4, -1), (), 2, 2)
    groups = [np.array([0, 1]), np.array([2, 3])]
    buckets = whole_release_large._signature_buckets(problem, groups)
    rebuilt = rebuild_buckets(buckets, groups, deadline=time.perf_counter() + 10.0,
                              extent=BoxExtent(points))
    assert rebuilt.rebuilt == 1
    assert sorted(sorted(g.tolist()) for g in rebuilt.groups) == [[0, 3], [1, 2]]


def spied(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[float]]:
    """Spies on the search: when each slot trade and rebuild was called, and the deadline
    it was given."""
    calls: dict[str, list[float]] = {"trade": [], "rebuild": []}
    trade, rebuild = whole_release_large.trade_slots, whole_release_large.rebuild_buckets

    def spy_trade(*args: Any, deadline: float, **kwargs: Any) -> Any:
        calls["trade"] += [time.perf_counter(), deadline]
        return trade(*args, deadline=deadline, **kwargs)

    def spy_rebuild(*args: Any, deadline: float, **kwargs: Any) -> Any:
        calls["rebuild"] += [time.perf_counter(), deadline]
        return rebuild(*args, deadline=deadline, **kwargs)

    monkeypatch.setattr(whole_release_large, "trade_slots", spy_trade)
    monkeypatch.setattr(whole_release_large, "rebuild_buckets", spy_rebuild)
    monkeypatch.setattr(whole_release, "WHOLE_MODEL_ROWS", 10)
    return calls


def shares(calls: dict[str, list[float]]) -> tuple[float, float]:
    """The share of the search the first trades were given, and the share of the search
    left the rebuild was given (the search ends at the last trades' deadline)."""
    started, first, end = calls["trade"][0], calls["trade"][1], calls["trade"][-1]
    rebuild_at, rebuild_until = calls["rebuild"]
    return (first - started) / (end - started), (rebuild_until - rebuild_at) / (end - rebuild_at)


def test_the_search_rebuilds_early_with_room(monkeypatch: pytest.MonkeyPatch) -> None:
    problem, groups = across_signatures()
    calls = spied(monkeypatch)
    answer = solve_whole_release(problem, time_limit=2.0, hint=(groups, []))
    assert release_problems(problem, list(answer.groups), answer.deferred) == []
    assert len(calls["trade"]) == 4 and len(calls["rebuild"]) == 2  # trades, rebuild, trades
    trades, rebuild = shares(calls)
    assert trades == pytest.approx(whole_release_large.SLOT_SHARE, abs=0.05)
    assert trades < 0.5  # the rebuild comes early, not after the trades
    assert rebuild == pytest.approx(whole_release_large.REBUILD_CAP, abs=0.05)
    assert answer.objective_a == 0


def test_without_room_the_trades_take_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    problem, groups = across_signatures()
    calls = spied(monkeypatch)
    monkeypatch.setattr(whole_release_large, "REBUILD_SECONDS_PER_ROW", 1e6)
    answer = solve_whole_release(problem, time_limit=2.0, hint=(groups, []))
    assert release_problems(problem, list(answer.groups), answer.deferred) == []
    trades, rebuild = shares(calls)
    assert trades == pytest.approx(1.0, abs=0.05)
    assert rebuild == pytest.approx(1.0, abs=0.05)  # after stalled trades: until the end


def test_the_trades_go_on_when_no_bucket_is_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped at SLOT_SHARE, the trades resume until the search's end even where the
    rebuild improves no bucket (else the rest of the search went to the neighbourhoods)."""
    problem, groups = across_signatures()
    calls: list[float] = []
    trade = whole_release_large.trade_slots

    def spy_trade(*args: Any, deadline: float, **kwargs: Any) -> Any:
        calls.append(deadline)
        return trade(*args, deadline=deadline, **kwargs)

    def no_rebuild(problem: WholeReleaseProblem, groups: Any, **kwargs: Any) -> Any:
        return Rebuild(tuple(groups), 0, 0, 0.0)

    monkeypatch.setattr(whole_release_large, "trade_slots", spy_trade)
    monkeypatch.setattr(whole_release_large, "rebuild_buckets", no_rebuild)
    monkeypatch.setattr(whole_release, "WHOLE_MODEL_ROWS", 10)
    answer = solve_whole_release(problem, time_limit=2.0, hint=(groups, []))
    assert release_problems(problem, list(answer.groups), answer.deferred) == []
    assert len(calls) == 2 and calls[0] < calls[1]


def test_the_large_search_rebuilds_a_first_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first release through the large-release search: its groups of one signature are
    tried as buckets (before, a release without old rows had no bucket to rebuild)."""
    rng = np.random.default_rng(3)
    points = np.vstack([rng.random((6, 2)) * 0.1, 1.0 + rng.random((6, 2)) * 0.1])
    values = np.array([0, 1, 2] * 4)
    problem = WholeReleaseProblem(points, values, np.full(12, -1), (), 3, 3)
    groups = [np.array([0, 4, 8]), np.array([3, 1, 11]), np.array([6, 10, 2]),
              np.array([9, 7, 5])]  # crosswise: most hold rows of both clusters
    assert release_problems(problem, groups, NO_DEFERRED) == []
    calls = spied(monkeypatch)
    answer = solve_whole_release(problem, time_limit=2.0, hint=(groups, []))
    assert release_problems(problem, list(answer.groups), answer.deferred) == []
    match = re.search(r"rebuild: (\d+) of (\d+) buckets", answer.detail)
    assert match is not None and int(match.group(2)) >= 1, answer.detail
    assert calls["rebuild"]
