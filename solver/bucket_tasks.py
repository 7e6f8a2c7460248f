"""The §4.3 split of a release's buckets as independent tasks (issue 17).

After division, balancing and assignment, the buckets of an m-invariant release are
independent: the split of one bucket reads only its own rows
(:mod:`republish.heuristics.perimeter_split`). :func:`split_in_tasks` cuts the buckets
into tasks of whole buckets and runs them

* ``"local"``: one after the other in this process (the reference for the others);
* ``"processes"``: on local worker processes (:class:`concurrent.futures.ProcessPoolExecutor`;
  where ``fork`` exists the workers inherit the tasks instead of receiving them pickled,
  so the rows are not copied through pipes and the parent holds no pickled payloads);
* ``"tcp://HOST:PORT"`` (any Dask address): as tasks on a Dask cluster
  (``dask.distributed``; the ``dask`` extra).

The client computes the QI ranks of all rows once (how rows with equal values are ordered,
exactly as one split of the whole release orders them) and ships each task its rows'
normalized points, values, bucket labels and ranks; a task returns its groups. The groups
are the same wherever the tasks run and however the buckets are cut: equal to one call of
:func:`~republish.heuristics.perimeter_split.split_buckets_min_perimeter` on every bucket.
Group labels are made canonical (numbered in order of first appearance) so that the labels
are equal too.

:func:`automatic_scheduler` is the default of a release step (``scheduler=None``): tasks
on local processes for releases of at least :data:`AUTOMATIC_TASK_ROWS` rows on a machine
with two or more usable cores, else the one in-process split. A process that is itself a
worker (a ``multiprocessing`` child, a batch worker, which sets
:data:`NO_AUTOMATIC_TASKS`) keeps the in-process split: its siblings already use the cores.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from republish.errors import ParameterError
from republish.heuristics.perimeter_split import (
    SplitResult,
    qi_ranks,
    split_buckets_min_perimeter,
)

__all__ = [
    "LOCAL",
    "PROCESSES",
    "AUTOMATIC_TASK_ROWS",
    "NO_AUTOMATIC_TASKS",
    "SplitTask",
    "TaskPlan",
    "automatic_scheduler",
    "canonical_groups",
    "check_scheduler",
    "plan_tasks",
    "split_in_tasks",
]

LOGGER = logging.getLogger(__name__)
LOCAL = "local"
PROCESSES = "processes"
#: Rows per task aimed at when the number of tasks is automatic.
TASK_ROWS = 200_000
#: Releases of at least this many rows split their buckets on local processes by default
#: (below, starting the processes and ranking the rows per task cost about what two cores
#: save; benchmarks/RESULTS.md, "The split of the buckets as tasks").
AUTOMATIC_TASK_ROWS = 1_000_000
#: Environment variable that turns the automatic tasks off in this process (set by the
#: batch worker processes).
NO_AUTOMATIC_TASKS = "REPUBLISH_NO_AUTOMATIC_TASKS"


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def automatic_scheduler(rows: int) -> str | None:
    """The scheduler of a release of ``rows`` rows when none is given: ``processes`` from
    :data:`AUTOMATIC_TASK_ROWS` rows on two or more usable cores, unless this process is
    a worker itself; else ``None`` (the in-process split)."""
    if rows < AUTOMATIC_TASK_ROWS or usable_cores() < 2:
        return None
    if multiprocessing.parent_process() is not None or os.environ.get(NO_AUTOMATIC_TASKS):
        return None
    return PROCESSES


def check_scheduler(scheduler: str | None) -> str | None:
    """``None``, ``local``, ``processes`` or a Dask address (``tcp://HOST:PORT``, ...)."""
    if scheduler is None or scheduler in (LOCAL, PROCESSES) or (
            isinstance(scheduler, str) and "://" in scheduler):
        return scheduler
    raise ParameterError(
        f"scheduler (--scheduler) must be 'local', 'processes' or a Dask scheduler address "
        f"such as tcp://HOST:PORT, got {scheduler!r}.")


@dataclass(frozen=True)
class SplitTask:
    """One task: rows (points normalized to [0, 1], NaN for counterfeits), their values,
    bucket labels and QI ranks ``(d, n)`` in the whole release."""

    points: np.ndarray
    values: np.ndarray
    buckets: np.ndarray
    rank: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.points.nbytes + self.values.nbytes + self.buckets.nbytes
                   + self.rank.nbytes)


@dataclass(frozen=True)
class TaskPlan:
    """Item positions of every task (whole buckets, ascending positions)."""

    parts: tuple[np.ndarray, ...]

    @property
    def sizes(self) -> list[int]:
        return [len(p) for p in self.parts]


def plan_tasks(buckets: np.ndarray, tasks: int) -> TaskPlan:
    """Whole buckets into at most ``tasks`` tasks of similar size: the largest bucket first,
    to the least loaded task (longest processing time first). Deterministic."""
    codes = np.unique(np.asarray(buckets), return_inverse=True)[1].reshape(-1)
    sizes = np.bincount(codes)
    tasks = max(1, min(int(tasks), len(sizes)))
    load = np.zeros(tasks, dtype=np.int64)
    task_of_bucket = np.empty(len(sizes), dtype=np.int64)
    for bucket in np.argsort(-sizes, kind="stable").tolist():
        target = int(np.argmin(load))
        task_of_bucket[bucket] = target
        load[target] += sizes[bucket]
    task_of_item = task_of_bucket[codes]
    order = np.argsort(task_of_item, kind="stable")
    starts = np.searchsorted(task_of_item[order], np.arange(1, tasks))
    return TaskPlan(tuple(part for part in np.split(order, starts) if len(part)))


def run_task(task: SplitTask) -> tuple[np.ndarray, int]:
    """The split of one task's buckets: its groups (0..g-1) and recursion depth."""
    result = split_buckets_min_perimeter(task.points, task.values, task.buckets, task.rank)
    return result.groups, result.levels


def canonical_groups(groups: np.ndarray) -> np.ndarray:
    """Group labels renumbered 0.. in order of first appearance."""
    if not len(groups):
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(groups, return_index=True, return_inverse=True)
    appearance = np.empty(len(first), dtype=np.int64)
    appearance[np.argsort(first, kind="stable")] = np.arange(len(first))
    return appearance[inverse.reshape(-1)]


#: The tasks forked workers inherit (set only while a pool of forked workers runs).
_INHERITED: Sequence[SplitTask] = ()


def _run_inherited(index: int) -> tuple[np.ndarray, int]:
    return run_task(_INHERITED[index])


def _run_on_processes(tasks: Sequence[SplitTask], workers: int) -> list[tuple[np.ndarray, int]]:
    global _INHERITED
    from concurrent.futures import ProcessPoolExecutor

    workers = max(1, min(workers, len(tasks)))
    if "fork" not in multiprocessing.get_all_start_methods():
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(run_task, tasks))
    # Forked workers see the tasks as they were at the fork (copy-on-write pages): only the
    # index goes to a worker and only the groups come back.
    _INHERITED = tasks
    try:
        with ProcessPoolExecutor(max_workers=workers,
                                 mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_run_inherited, range(len(tasks))))
    finally:
        _INHERITED = ()


def _run(tasks: Sequence[SplitTask], scheduler: str, workers: int) -> list[tuple[np.ndarray, int]]:
    if scheduler == LOCAL or len(tasks) <= 1:
        return [run_task(task) for task in tasks]
    if scheduler == PROCESSES:
        return _run_on_processes(tasks, workers)
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ParameterError(
            f"scheduler {scheduler!r} needs Dask: pip install 'republish[dask]'.") from exc
    with Client(scheduler) as client:
        shipped = client.scatter(list(tasks))
        futures = client.map(run_task, shipped, pure=False)
        return list(client.gather(futures))


def _task_ranks(rank: np.ndarray, plan: TaskPlan) -> list[np.ndarray]:
    """Each task's rows ranked ``0..n-1`` per QI in the order of the whole release's
    ranks (int32 when they fit): the global order, filtered per task by one stable
    partition on task ids."""
    d, n = rank.shape
    task_of = np.empty(n, dtype=np.int16 if len(plan.parts) < 2**15 else np.int64)
    local_of = np.empty(n, dtype=np.int64)
    for t, part in enumerate(plan.parts):
        task_of[part] = t
        local_of[part] = np.arange(len(part))
    small = np.int32 if n < 2**31 else np.int64
    out = [np.empty((d, len(part)), dtype=small) for part in plan.parts]
    bounds = np.cumsum([0, *plan.sizes])
    for a in range(d):
        by_rank = np.empty(n, dtype=np.int64)
        by_rank[rank[a]] = np.arange(n)
        grouped = by_rank[np.argsort(task_of[by_rank], kind="stable")]
        for t, part in enumerate(plan.parts):
            rows = local_of[grouped[bounds[t]:bounds[t + 1]]]
            out[t][a, rows] = np.arange(len(part))
    return out


def default_tasks(rows: int, scheduler: str, workers: int) -> int:
    """Tasks for ``rows`` items: at least one per worker slot, about :data:`TASK_ROWS` each."""
    slots = workers if scheduler != LOCAL else 1
    return max(slots, -(-rows // TASK_ROWS))


def split_in_tasks(
    points: np.ndarray,
    values: np.ndarray,
    buckets: np.ndarray,
    *,
    scheduler: str = LOCAL,
    tasks: int = 0,
    workers: int | None = None,
) -> SplitResult:
    """Every balanced bucket split into groups (as
    :func:`~republish.heuristics.perimeter_split.split_buckets_min_perimeter`), the buckets
    cut into ``tasks`` tasks (0: automatic) run on ``scheduler`` (see the module
    docstring) with ``workers`` local processes (default: the CPU count). Returns
    canonical group labels."""
    scheduler = check_scheduler(scheduler) or LOCAL
    points = np.asarray(points, dtype=np.float64)
    values = np.asarray(values)
    buckets = np.asarray(buckets)
    if not len(points):
        return SplitResult(groups=np.zeros(0, dtype=np.int64), group_count=0, levels=0)
    started = time.perf_counter()
    workers = workers or usable_cores()
    plan = plan_tasks(buckets, tasks or default_tasks(len(points), scheduler, workers))
    ranks = _task_ranks(qi_ranks(points), plan)
    work = [SplitTask(points[part], values[part], buckets[part], rank)
            for part, rank in zip(plan.parts, ranks, strict=True)]
    prepared = time.perf_counter()
    answers = _run(work, scheduler, workers)
    ran = time.perf_counter()
    groups = np.empty(len(points), dtype=np.int64)
    offset, levels = 0, 0
    for part, (local, depth) in zip(plan.parts, answers, strict=True):
        groups[part] = local + offset
        offset += int(local.max()) + 1 if len(local) else 0
        levels = max(levels, depth)
    groups = canonical_groups(groups)
    LOGGER.info("split tasks", extra={"split_tasks": {
        "scheduler": scheduler, "tasks": len(work), "rows": plan.sizes,
        "bytes": [task.nbytes for task in work], "buckets": int(len(np.unique(buckets))),
        "client_s": round(prepared - started + time.perf_counter() - ran, 3),
        "tasks_s": round(ran - prepared, 3)}})
    return SplitResult(groups=groups, group_count=offset, levels=levels)
