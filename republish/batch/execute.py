"""Running the instances of a batch: local worker processes, or a Dask cluster.

Locally, ``workers`` threads each drive one worker process
(:class:`~republish.batch.worker.Sidecar`: it kills and replaces the process when an
instance overruns ``time_limit + kill margin``, recording ``TIMEOUT``, or when it crashes,
recording ``ERROR``). On Dask each worker thread keeps its own worker process between
tasks, so imports are paid once per thread, not per instance; plain ``subprocess``
workers are used because Dask workers are daemonic processes, which may not start
``multiprocessing`` children.

``concurrent.futures.ProcessPoolExecutor`` is not used on purpose: it cannot stop one
task, and a killed pool process breaks the whole pool with every running task in it.

:func:`run_batch` journals each finished row before it records the next (see
:mod:`republish.batch.results`), so an interrupted batch resumes where it stopped.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from republish.batch.manifest import BatchInstance, Manifest
from republish.batch.results import (
    Journal,
    consolidate,
    journal_path,
    make_row,
    previous_rows,
    table_format,
)
from republish.batch.worker import Sidecar, describe, error_row
from republish.errors import ParameterError

#: Seconds between rewrites of the output file while a batch runs.
REFRESH_OUTPUT_S = 30.0
Finished = tuple[BatchInstance, dict[str, Any], str]


def run_local(
    instances: Sequence[BatchInstance],
    workers: int,
    margin: float | None = None,
    on_start: Callable[[BatchInstance], None] | None = None,
    on_end: Callable[[BatchInstance], None] | None = None,
) -> Generator[Finished, None, None]:
    """Yield ``(instance, row, worker)`` as instances finish on ``workers`` processes.

    ``on_start``/``on_end`` are called from the driving threads when an instance begins
    and ends in its worker process. Closing the generator (or an exception in the
    consumer) kills the worker processes; the rows of instances still running are then
    never yielded.
    """
    if not instances:
        return
    sidecars = [Sidecar(margin) for _ in range(max(1, min(workers, len(instances))))]
    for sidecar in sidecars:
        sidecar.start()  # import the solvers in parallel before the first instance
    idle: queue.Queue[tuple[int, Sidecar]] = queue.Queue()
    for slot, sidecar in enumerate(sidecars, start=1):
        idle.put((slot, sidecar))
    stopping = threading.Event()

    def task(instance: BatchInstance) -> tuple[dict[str, Any], str]:
        slot, sidecar = idle.get()
        try:
            if stopping.is_set():
                return error_row("batch interrupted"), f"local-{slot}"
            began: list[bool] = []

            def begin() -> None:
                began.append(True)
                if on_start is not None:
                    on_start(instance)

            row = sidecar.run(instance, begin)
            if began and on_end is not None:
                on_end(instance)
            return row, f"local-{slot}"
        finally:
            idle.put((slot, sidecar))

    pool = ThreadPoolExecutor(max_workers=len(sidecars), thread_name_prefix="batch")
    futures: dict[Future[tuple[dict[str, Any], str]], BatchInstance] = {
        pool.submit(task, instance): instance for instance in instances
    }
    try:
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                row, worker = future.result()
                yield futures[future], row, worker
    finally:
        stopping.set()
        for future in futures:
            future.cancel()
        for sidecar in sidecars:
            sidecar.close()
        pool.shutdown(wait=True, cancel_futures=True)


_THREAD_SIDECAR = threading.local()


def dask_task(instance_data: dict[str, Any], margin: float | None) -> tuple[dict[str, Any], str]:
    """Run one instance on a Dask worker (in the worker thread's own worker process)."""
    from distributed import get_worker

    sidecar = getattr(_THREAD_SIDECAR, "sidecar", None)
    if sidecar is None:
        sidecar = _THREAD_SIDECAR.sidecar = Sidecar(margin)
    sidecar.margin = margin
    row = sidecar.run(BatchInstance.from_dict(instance_data))
    return row, str(get_worker().address)


def run_dask(
    instances: Sequence[BatchInstance], scheduler: str, margin: float | None = None
) -> Generator[Finished, None, None]:
    """Yield ``(instance, row, worker)`` as instances finish on the Dask cluster."""
    if not instances:
        return
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # the optional extra is not installed
        raise ParameterError(
            "--scheduler needs Dask: pip install 'republish[dask]'."
        ) from exc
    client = Client(scheduler)
    futures: dict[Any, BatchInstance] = {}
    try:
        futures = {
            client.submit(dask_task, instance.to_dict(), margin, pure=False,
                          key=f"republish-{instance.problem}-{instance.instance_id}"): instance
            for instance in instances
        }
        for future in as_completed(futures):
            instance = futures[future]
            try:
                row, worker = future.result()
            except Exception as exc:  # a lost worker (KilledWorker) fails this task only
                row, worker = error_row(f"Dask task failed: {describe(exc)}"), ""
            yield instance, row, worker
    finally:
        for future in futures:
            future.cancel()
        client.close()


def dask_slots(scheduler: str) -> int:
    """Worker threads of the cluster (for the progress display)."""
    from distributed import Client

    with Client(scheduler) as client:
        info = client.scheduler_info()
    return sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values()) or 1


@dataclass
class BatchProgress:
    """Counters of a running batch (``done`` includes instances finished earlier)."""

    total: int
    done: int = 0
    running: int = 0
    failed: int = 0
    timeouts: int = 0
    skipped: int = 0
    started_at: float = field(default_factory=time.perf_counter)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started_at


@dataclass(frozen=True)
class BatchRun:
    """The consolidated results table and what this run did."""

    frame: pd.DataFrame
    computed: int
    skipped: int
    interrupted: bool


def run_batch(
    manifest: Manifest,
    output: str | Path,
    *,
    workers: int = 2,
    scheduler: str | None = None,
    resume: bool = False,
    retry_failed: bool = False,
    overwrite: bool = False,
    margin: float | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
) -> BatchRun:
    """Run every instance of ``manifest`` not finished yet and write the results table.

    Without ``resume`` an existing output or journal is an error unless ``overwrite``.
    Each finished instance is journaled before the next one is recorded; on an
    interruption (``KeyboardInterrupt``) the finished rows are consolidated and the
    exception re-raised, so ``resume=True`` continues where the batch stopped.
    """
    output = Path(output)
    table_format(output)
    if workers < 1:
        raise ParameterError(f"workers={workers}: at least one worker process is needed.")
    journal = Journal(journal_path(output))
    if (output.exists() or journal.path.exists()) and not resume:
        if not overwrite:
            raise ParameterError(
                f"{output} (or its journal) already exists; pass --resume to continue that "
                "batch or --overwrite to start again."
            )
        output.unlink(missing_ok=True)
        journal.remove()
    rows = previous_rows(output, retry_failed) if resume else {}
    todo = [i for i in manifest.instances if i.instance_id not in rows]
    progress = BatchProgress(total=len(manifest.instances), skipped=len(manifest.instances)
                             - len(todo))
    progress.done = progress.skipped
    lock = threading.Lock()

    def started(_: BatchInstance) -> None:
        with lock:
            progress.running += 1

    def ended(_: BatchInstance) -> None:
        with lock:
            progress.running -= 1

    def notify() -> None:
        if on_progress is not None:
            on_progress(progress)

    if scheduler is None:
        finished = run_local(todo, workers, margin, on_start=started, on_end=ended)
    else:
        progress.running = min(len(todo), dask_slots(scheduler))
        finished = run_dask(todo, scheduler, margin)
    computed = 0
    interrupted = True
    written = time.perf_counter()
    try:
        notify()
        for instance, result, worker in finished:
            row = make_row(instance, result, worker)
            journal.append(row)
            rows[instance.instance_id] = row
            computed += 1
            if time.perf_counter() - written > REFRESH_OUTPUT_S:
                consolidate(manifest.instances, rows, output)  # readable while running
                written = time.perf_counter()
            with lock:
                progress.done += 1
                progress.failed += row["status"] == "ERROR"
                progress.timeouts += row["status"] == "TIMEOUT"
                if scheduler is not None:
                    progress.running = min(progress.running, progress.total - progress.done)
            notify()
        interrupted = False
    finally:
        finished.close()  # kills the local worker processes still running
        frame = consolidate(manifest.instances, rows, output)
    return BatchRun(frame, computed, progress.skipped, interrupted)
