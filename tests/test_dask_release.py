"""The split of an m-invariant release's buckets as tasks (issue 17): on a Dask
``LocalCluster`` of several worker processes, on local processes and in this process, the
release is the one computed without tasks, for the same seed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from republish.datasets import dynamic_series, synthetic_census
from republish.errors import ParameterError
from republish.principles.catalog.m_invariance import MInvarianceOptions
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
