"""The split of an m-invariant release's buckets as tasks (issue 17): on a Dask
``LocalCluster`` of several worker processes, on local processes and in this process, the
release is the one computed without tasks, for the same seed."""

from __future__ import annotations

import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import pytest

from republish.datasets import dynamic_series, synthetic_census
from republish.errors import ParameterError
from republish.principles.catalog.m_invariance import MInvarianceOptions
from republish.solver import bucket_tasks
from republish.solver.m_invariance import build_m_invariant, publish_m_invariant
from republish.solver.options import SolveOptions
from republish.solver.release_step import StepResult, run_release_step


def _series(scheduler: str | None, tasks: int = 0) -> list[StepResult]:
    table, schema = synthetic_census(9_000, seed=11)
    results: list[StepResult] = []
    rng = np.random.default_rng(11)
    state = None
    for microdata in dynamic_series(table, 7_000, 2_000, 2, seed=11):
        if tasks:
            result = run_release_step(
                "m-invariance", build_m_invariant, microdata, schema, MInvarianceOptions(10),
                state, solve=SolveOptions("heuristic", scheduler=scheduler, split_tasks=tasks),
                rng=rng, validated=True)
        else:
            result = publish_m_invariant(microdata, schema, 10, state, rng=rng,
                                         validated=True, mode="heuristic", scheduler=scheduler)
        state = result.state
        results.append(result)
    return results


def _same(first: list[StepResult], second: list[StepResult]) -> None:
    for a, b in zip(first, second, strict=True):
        pd.testing.assert_frame_equal(a.release.published, b.release.published)
        pd.testing.assert_frame_equal(a.release.counterfeits, b.release.counterfeits)
        pd.testing.assert_frame_equal(a.release.assignment, b.release.assignment)
        pd.testing.assert_frame_equal(a.state.rows, b.state.rows)
        assert a.state.signatures == b.state.signatures
        assert a.certificate.objective == b.certificate.objective
        assert a.groups == b.groups and a.counterfeits == b.counterfeits


@pytest.fixture(scope="module")
def reference() -> list[StepResult]:
    return _series(None)


def test_tasks_in_this_process_equal_one_split(reference: list[StepResult]) -> None:
    _same(reference, _series("local", tasks=5))


def test_local_processes_equal_one_split(reference: list[StepResult]) -> None:
    _same(reference, _series("processes", tasks=3))


def test_dask_local_cluster_equals_local_run(reference: list[StepResult]) -> None:
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            _same(reference, _series(cluster.scheduler_address, tasks=6))
        ran = [t for t in stream.data if "run_task" in str(t["key"])]
    # 6 tasks per release ran on the cluster's worker processes.
    assert len(ran) == 12
    assert len({t["worker"] for t in ran}) >= 2


def test_bad_scheduler_is_refused() -> None:
    with pytest.raises(ParameterError, match="scheduler"):
        SolveOptions("heuristic", scheduler="nowhere")
    with pytest.raises(ParameterError, match="split_tasks"):
        SolveOptions("heuristic", split_tasks=-1)


def test_automatic_scheduler_chooses_processes_only_for_large_releases(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(bucket_tasks.NO_AUTOMATIC_TASKS, raising=False)
    monkeypatch.setattr(bucket_tasks, "usable_cores", lambda: 2)
    large = bucket_tasks.AUTOMATIC_TASK_ROWS
    assert bucket_tasks.automatic_scheduler(large - 1) is None
    assert bucket_tasks.automatic_scheduler(large) == bucket_tasks.PROCESSES
    monkeypatch.setattr(bucket_tasks, "usable_cores", lambda: 1)
    assert bucket_tasks.automatic_scheduler(large) is None
    monkeypatch.setattr(bucket_tasks, "usable_cores", lambda: 2)
    monkeypatch.setenv(bucket_tasks.NO_AUTOMATIC_TASKS, "1")
    assert bucket_tasks.automatic_scheduler(large) is None


def _scheduler_in_child(rows: int) -> str | None:
    return bucket_tasks.automatic_scheduler(rows)


def test_a_worker_process_keeps_the_split_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(bucket_tasks.NO_AUTOMATIC_TASKS, raising=False)
    monkeypatch.setattr(bucket_tasks, "usable_cores", lambda: 2)
    context = multiprocessing.get_context("fork" if "fork" in
                                          multiprocessing.get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        inside = pool.submit(_scheduler_in_child, bucket_tasks.AUTOMATIC_TASK_ROWS).result()
    assert inside is None


def test_large_releases_split_on_processes_by_default(
        reference: list[StepResult], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    # the 7,000-row releases count as large here: the default must then start processes
    monkeypatch.delenv(bucket_tasks.NO_AUTOMATIC_TASKS, raising=False)
    monkeypatch.setattr(bucket_tasks, "AUTOMATIC_TASK_ROWS", 5_000)
    monkeypatch.setattr(bucket_tasks, "usable_cores", lambda: 2)
    with caplog.at_level(logging.INFO, logger=bucket_tasks.__name__):
        _same(reference, _series(None))
    runs = [r.split_tasks for r in caplog.records if hasattr(r, "split_tasks")]
    assert [run["scheduler"] for run in runs] == [bucket_tasks.PROCESSES] * 2


def test_pickled_tasks_equal_inherited_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    # where fork does not exist the tasks are pickled to the workers: the same groups
    rng = np.random.default_rng(5)
    # balanced buckets: bucket b holds 250 rows of each of the values b, b + 1, b + 2
    buckets = np.repeat(np.arange(4), 750)
    values = buckets + np.tile(np.repeat(np.arange(3), 250), 4)
    order = rng.permutation(len(values))
    buckets, values = buckets[order], values[order]
    points = rng.random((len(values), 3))
    inherited = bucket_tasks.split_in_tasks(points, values, buckets, scheduler="processes",
                                            tasks=4, workers=2)
    in_process = bucket_tasks.split_in_tasks(points, values, buckets, scheduler="local", tasks=4)
    monkeypatch.setattr(bucket_tasks.multiprocessing, "get_all_start_methods",
                        lambda: ["spawn"])
    pickled = bucket_tasks.split_in_tasks(points, values, buckets, scheduler="processes",
                                          tasks=4, workers=2)
    np.testing.assert_array_equal(inherited.groups, in_process.groups)
    np.testing.assert_array_equal(pickled.groups, in_process.groups)
    assert inherited.group_count == pickled.group_count == in_process.group_count
    assert bucket_tasks._INHERITED == ()
