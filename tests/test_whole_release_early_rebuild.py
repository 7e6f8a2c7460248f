"""The large-release search rebuilds the buckets early where it has room
(models/whole_release_large.py, _trade_share): the first slot trades stop at SLOT_SHARE of
the search, the rebuild follows and the trades go on until the search's end; a first
release, or a search too short for the rebuild, keeps the trades alone until then."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from test_whole_release_new_groups import across_signatures

import republish.models.whole_release as whole_release
import republish.models.whole_release_large as whole_release_large
from republish.models.whole_release import solve_whole_release
from republish.models.whole_release_problem import WholeReleaseProblem, release_problems
from republish.models.whole_release_rebuild import Rebuild


def test_trade_share_needs_old_rows_and_room() -> None:
    problem, _ = across_signatures()
    old_rows = int((problem.bucket >= 0).sum())
    assert old_rows > 0
    room = whole_release_large.REBUILD_ROOM * whole_release_large.REBUILD_SECONDS_PER_ROW * \
        old_rows
    assert whole_release_large._trade_share(problem, room) == whole_release_large.SLOT_SHARE
    assert whole_release_large._trade_share(problem, 0.9 * room) == \
        whole_release_large.SLOT_SHARE_FIRST
    first = WholeReleaseProblem(problem.points, problem.values,
                                np.full(len(problem.values), -1), (), 3, 6)
    assert whole_release_large._trade_share(first, 1e9) == whole_release_large.SLOT_SHARE_FIRST
    assert whole_release_large.SLOT_SHARE < whole_release_large.SLOT_SHARE_FIRST == 1.0


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
