"""The split of an m-invariant release's buckets on Dask: speed-up against workers (issue 17).

A synthetic census release 2 (``rows`` rows, ``r`` deletions and insertions after release
1; m = 10, heuristic mode) is computed once without tasks, then with its buckets split as
``--tasks`` tasks on a Dask ``LocalCluster`` of 1, 2, ... worker processes (one thread
each). Dask workers get ``MALLOC_MMAP_THRESHOLD_=32 MiB`` (see ``main``). For every run: the
release's wall time, the split phase, the client's serial part
(ranks, task payloads, merge) and the tasks' part, task sizes (rows) and the data shipped
per task; and whether the release equals the one computed without tasks (it must).

Usage::

    python benchmarks/scale_dask.py                         # 40k rows: a smoke run
    nice -n 10 python benchmarks/scale_dask.py --rows 2000000 --r 400000 --workers 1 2
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from typing import Any

import numpy as np
import pandas as pd

from republish.datasets import dynamic_series, synthetic_census
from republish.principles.catalog.m_invariance import MInvarianceOptions
from republish.solver.m_invariance import build_m_invariant
from republish.solver.options import SolveOptions
from republish.solver.release_step import StepResult, run_release_step


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        found = getattr(record, "split_tasks", None)
        if found is not None:
            self.records.append(found)


def _release(table: pd.DataFrame, schema: Any, state: Any, seed: int,
             solve: SolveOptions) -> tuple[StepResult, float]:
    started = time.perf_counter()
    result = run_release_step("m-invariance", build_m_invariant, table, schema,
                              MInvarianceOptions(10), state, solve=solve,
                              rng=np.random.default_rng(seed), validated=True)
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--r", type=int, default=8_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import dask
    from distributed import Client, LocalCluster

    # Dask's nanny sets MALLOC_TRIM_THRESHOLD_ in its workers, which turns off glibc's
    # dynamic mmap threshold: every large numpy temporary is then a fresh mmap and the
    # split runs ~2x slower than in this process. A fixed 32 MiB mmap threshold restores it.
    dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": 2**25})

    table, schema = synthetic_census(args.rows + args.r, seed=args.seed)
    first, second = dynamic_series(table, args.rows, args.r, 2, seed=args.seed)
    del table
    state = _release(first, schema, None, args.seed, SolveOptions("heuristic"))[0].state
    reference, wall = _release(second, schema, state, args.seed + 1, SolveOptions("heuristic"))
    split = no_tasks = reference.certificate.times.get("split", 0.0)
    print(f"{args.rows} rows, r = {args.r}, load {os.getloadavg()[0]:.1f}; "
          f"without tasks: release {wall:.2f} s, split {split:.2f} s")
    print("| workers | tasks | release s | split s | client serial s | tasks s | split "
          "speed-up vs 1 worker | vs no tasks | rows per task | MB shipped per task | "
          "same release |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    capture = _Capture()
    logger = logging.getLogger("republish.solver.bucket_tasks")
    logger.addHandler(capture)
    logger.setLevel(logging.INFO)
    base_split: float | None = None
    for workers in args.workers:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            solve = SolveOptions("heuristic", scheduler=cluster.scheduler_address,
                                 split_tasks=args.tasks)
            _release(second.iloc[:2000], schema, None, 0, solve)  # warm the workers up
            capture.records.clear()
            result, wall = _release(second, schema, state, args.seed + 1, solve)
        stats = capture.records[-1]
        split = result.certificate.times.get("split", 0.0)
        base_split = base_split or split
        same = (result.release.published.equals(reference.release.published)
                and result.release.assignment.equals(reference.release.assignment)
                and result.state.rows.equals(reference.state.rows))
        rows = stats["rows"]
        megabytes = [b / 2**20 for b in stats["bytes"]]
        print(f"| {workers} | {stats['tasks']} | {wall:.2f} | {split:.2f} | "
              f"{stats['client_s']:.2f} | {stats['tasks_s']:.2f} | {base_split / split:.2f} | "
              f"{no_tasks / split:.2f} | "
              f"{min(rows)}–{max(rows)} | {min(megabytes):.1f}–{max(megabytes):.1f} | "
              f"{'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
