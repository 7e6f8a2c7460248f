"""A large release's bound on (b) in a second process (models/whole_release_bound_process.py):
the child computes what the parent would, the search keeps the whole budget, and a child
that fails or cannot start leaves a weaker bound, never a wrong one."""

from __future__ import annotations

import multiprocessing
import os
import time
from fractions import Fraction
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import pytest
from test_whole_release_new_groups import across_signatures

import republish.models.whole_release as whole_release
import republish.models.whole_release_bound_process as bound_process
import republish.models.whole_release_large as whole_release_large
from republish.models.whole_release import solve_whole_release
from republish.models.whole_release_counts import BoxExtent
from republish.models.whole_release_pair_bound import lower_bound_b
from republish.models.whole_release_problem import WholeReleaseProblem, release_problems

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="the bound runs beside the search only where fork exists")


def old_and_new(seed: int = 0) -> WholeReleaseProblem:
    """Two buckets of m = 3 old rows each, short of a row here and there, and new rows of
    every value: a release whose row and pair bounds are both positive."""
    rng = np.random.default_rng(seed)
    values = np.array([0, 1, 2] * 4 + [0, 1, 3] * 3 + [0, 1, 2, 3] * 3)
    bucket = np.array([0] * 12 + [1] * 9 + [-1] * 12)
    bucket[[0, 13]] = -1  # deleted and re-inserted: new rows now
    signatures = (frozenset({0, 1, 2}), frozenset({0, 1, 3}))
    return WholeReleaseProblem(rng.random((len(values), 2)), values, bucket, signatures, 3, 4)


def test_the_child_computes_the_parents_bound() -> None:
    problem = old_and_new()
    extent = BoxExtent(problem.points)
    # weights' deadline passed: uniform weights only, the same numbers in both processes
    now = time.perf_counter()
    here = lower_bound_b(problem, extent, Fraction(0), Fraction(1), deadline=now + 30.0,
                         weights_deadline=now)
    assert here > 0
    pending = bound_process.bound_beside(problem, extent, Fraction(0), Fraction(1),
                                         deadline=now + 30.0, weights_deadline=now)
    assert pending is not None
    assert pending.process.pid != os.getpid()
    assert pending.collect(time.perf_counter() + 30.0) == pytest.approx(here)
    assert not pending.process.is_alive()


def pid_bound(*args: Any, **kwargs: Any) -> float:
    return float(os.getpid())


def failing_bound(*args: Any, **kwargs: Any) -> float:
    raise RuntimeError("the bound failed")


def silent_bound(*args: Any, **kwargs: Any) -> float:
    time.sleep(60.0)
    return 1.0


def start(monkeypatch: pytest.MonkeyPatch, bound: Any) -> bound_process.Pending:
    monkeypatch.setattr(bound_process, "lower_bound_b", bound)  # the forked child sees it
    problem = old_and_new()
    pending = bound_process.bound_beside(problem, None, Fraction(0), Fraction(1),
                                         deadline=time.perf_counter() + 5.0,
                                         weights_deadline=time.perf_counter() + 5.0)
    assert pending is not None
    return pending


def test_the_bound_is_computed_in_another_process(monkeypatch: pytest.MonkeyPatch) -> None:
    pending = start(monkeypatch, pid_bound)
    child = pending.collect(time.perf_counter() + 30.0)
    assert child is not None and child == float(pending.process.pid) != float(os.getpid())


def test_a_failing_child_yields_no_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    pending = start(monkeypatch, failing_bound)
    assert pending.collect(time.perf_counter() + 30.0) is None
    assert not pending.process.is_alive()


def test_a_silent_child_is_stopped_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    pending = start(monkeypatch, silent_bound)
    asked = time.perf_counter()
    assert pending.collect(asked + 0.5) is None
    assert time.perf_counter() - asked < 5.0  # not the child's 60 s
    assert not pending.process.is_alive()


def _in_a_daemon(sender: Connection) -> None:
    problem = old_and_new()
    pending = bound_process.bound_beside(problem, None, Fraction(0), Fraction(1),
                                         deadline=time.perf_counter() + 5.0,
                                         weights_deadline=time.perf_counter() + 5.0)
    sender.send(pending is None)
    sender.close()


def test_a_daemonic_process_gets_no_child() -> None:
    """Pool workers are daemonic and may not fork children: the caller computes the bound
    itself."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    daemon = context.Process(target=_in_a_daemon, args=(sender,), daemon=True)
    daemon.start()
    assert receiver.poll(30.0)
    assert receiver.recv() is True
    daemon.join(10.0)


def spied_large(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[float]]:
    """The large-release search on a small problem, with the parent's own bound and the
    first slot trades' start recorded."""
    calls: dict[str, list[float]] = {"parent bound": [], "trade": []}
    trade = whole_release_large.trade_slots

    def spy_trade(*args: Any, deadline: float, **kwargs: Any) -> Any:
        calls["trade"].append(time.perf_counter())
        return trade(*args, deadline=deadline, **kwargs)

    def parent_bound(*args: Any, **kwargs: Any) -> float:
        calls["parent bound"].append(time.perf_counter())
        return 0.456

    monkeypatch.setattr(whole_release_large, "trade_slots", spy_trade)
    monkeypatch.setattr(whole_release_large, "lower_bound_b", parent_bound)
    monkeypatch.setattr(whole_release_large, "cycle_cover_bound", lambda *a, **k: 0.0)
    monkeypatch.setattr(whole_release, "WHOLE_MODEL_ROWS", 10)
    return calls


def child_bound(*args: Any, **kwargs: Any) -> float:
    return 0.123


def test_two_workers_take_the_bound_from_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    problem, groups = across_signatures()
    calls = spied_large(monkeypatch)
    monkeypatch.setattr(bound_process, "lower_bound_b", child_bound)
    started = time.perf_counter()
    answer = solve_whole_release(problem, time_limit=2.0, hint=(groups, []), workers=2)
    assert release_problems(problem, list(answer.groups), answer.deferred) == []
    assert answer.objective_a == 0 and answer.status_a == "OPTIMAL"
    assert answer.bound_b == pytest.approx(0.123)  # the child's, not the parent's 0.456
    assert calls["parent bound"] == []
    assert time.perf_counter() - started < 2.0 + 1.5


def test_one_worker_computes_the_bound_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    problem, groups = across_signatures()
    calls = spied_large(monkeypatch)
    monkeypatch.setattr(bound_process, "lower_bound_b", child_bound)
    answer = solve_whole_release(problem, time_limit=2.0, hint=(groups, []), workers=1)
    assert answer.bound_b == pytest.approx(0.456)
    assert len(calls["parent bound"]) == 1
    assert calls["parent bound"][0] < calls["trade"][0]  # before the search, as before


def test_a_failed_child_leaves_the_parents_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    problem, groups = across_signatures()
    calls = spied_large(monkeypatch)
    monkeypatch.setattr(bound_process, "lower_bound_b", failing_bound)
    answer = solve_whole_release(problem, time_limit=2.0, hint=(groups, []), workers=2)
    assert release_problems(problem, list(answer.groups), answer.deferred) == []
    assert answer.bound_b == pytest.approx(0.456)
    assert len(calls["parent bound"]) == 1
    assert calls["parent bound"][0] > calls["trade"][0]  # after the search, as a fallback


def reports_then_sleeps(*, report: Any, final: bool) -> float:
    for value in (1.0, 2.0, 3.0):
        report(value)
    if final:
        return 4.0
    time.sleep(60.0)
    return 5.0


def reports_then_fails(*, report: Any) -> float:
    report(7.0)
    raise RuntimeError("the child's job broke after one round")


@pytest.mark.parametrize(("job", "kwargs", "expected"), [
    (reports_then_sleeps, {"final": True}, 4.0),  # the final answer wins
    (reports_then_sleeps, {"final": False}, 3.0),  # busy at the deadline: the last report
    (reports_then_fails, {}, 7.0),  # failed afterwards: what it had reported
])
def test_collect_keeps_the_last_reported_answer(job: Any, kwargs: dict[str, Any],
                                                expected: float) -> None:
    pending = bound_process.run_beside(job, report="report", **kwargs)
    assert pending is not None
    asked = time.perf_counter()
    assert pending.collect(asked + 1.5) == expected
    assert time.perf_counter() - asked < 5.0
    assert not pending.process.is_alive()


def test_collect_refuses_what_accepts_refuses() -> None:
    pending = bound_process.run_beside(reports_then_sleeps, report="report", final=True,
                                       accepts=lambda answer: answer != 4.0)
    assert pending is not None
    assert pending.collect(time.perf_counter() + 5.0) == 3.0


def test_the_child_runs_the_relaxations_per_qi_first_where_the_cost_splits_by_qi(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With a perimeter cost the large release's child bounds by the relaxations per QI
    (models/whole_release_separable_bound.py) and then the pair bound: with the pair bound
    made 0 in the child, the release reports the relaxations' bound, as computed here."""
    from republish.models.whole_release_counts import rational_weight
    from republish.models.whole_release_separable_bound import separable_bound
    from republish.objectives import ReleaseCost
    from republish.schema import QIAttribute, Schema

    problem, groups = across_signatures()
    schema = Schema("id", "sa", tuple(QIAttribute(f"x{i}", "numeric")
                                      for i in range(problem.points.shape[1])))
    cost = ReleaseCost(schema=schema, points=problem.points)
    calls = spied_large(monkeypatch)
    monkeypatch.setattr(bound_process, "lower_bound_b", lambda *a, **k: 0.0)
    answer = solve_whole_release(problem, time_limit=3.0, hint=(groups, []), workers=2,
                                 extent=cost.model_extent(lambda rows: 0))
    assert calls["parent bound"] == []
    assert answer.status_a == "OPTIMAL"
    here = separable_bound(problem, cost, Fraction(answer.objective_a).limit_denominator(1000),
                           rational_weight(problem.deferral_weight), groups,
                           deadline=time.perf_counter() + 30.0)
    assert here.converged and here.bound > 0.0
    assert answer.bound_b == pytest.approx(here.bound, abs=1e-6)
    assert answer.bound_b <= answer.objective_b + 1e-9


def test_the_relaxations_then_the_pair_bound_answer_the_larger() -> None:
    """``bound_beside`` with ``separable_deadline``: the child's answer is the larger of
    the relaxations per QI and the row and pair bounds."""
    from republish.models.whole_release_counts import rational_weight
    from republish.models.whole_release_separable_bound import separable_bound
    from republish.objectives import ReleaseCost
    from republish.schema import QIAttribute, Schema

    problem = old_and_new()
    answer = solve_whole_release(problem, time_limit=5.0)
    assert answer.status_a == "OPTIMAL"
    a_star = Fraction(answer.objective_a).limit_denominator(1000)
    schema = Schema("id", "sa", (QIAttribute("x", "numeric"), QIAttribute("y", "numeric")))
    cost = ReleaseCost(schema=schema, points=problem.points)
    extent = cost.model_extent(lambda rows: 0)
    now = time.perf_counter()
    weight = rational_weight(problem.deferral_weight)
    relaxations = separable_bound(problem, cost, a_star, weight, list(answer.groups),
                                  deadline=now + 30.0).bound
    pairs = lower_bound_b(problem, extent, a_star, weight, deadline=now + 30.0,
                          weights_deadline=now + 30.0, groups=list(answer.groups))
    pending = bound_process.bound_beside(problem, extent, a_star, weight,
                                         deadline=now + 30.0, weights_deadline=now + 30.0,
                                         groups=list(answer.groups), cost=cost,
                                         separable_deadline=now + 15.0)
    assert pending is not None
    found = pending.collect(time.perf_counter() + 40.0)
    assert found == pytest.approx(max(relaxations, pairs), rel=1e-6)
    assert found <= answer.objective_b + 1e-9
