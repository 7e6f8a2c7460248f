"""How long the count model (objective (a) of a release step, CP-SAT) takes across solver
seeds, per CP-SAT linearization level.

The count model (:func:`republish.models.whole_release_counts.optimal_counts`) is small (a
few hundred integer variables) and usually proven in milliseconds, but CP-SAT's search
depends on its seed: a heavy tail there takes a 1 s release's whole share for (a). This
script collects the count models of an Adult series (``--initial`` rows, ``--r`` updates,
the model pipeline ``--mode`` at ``--time-limit``), then solves each with ``--seeds`` seeds
at each ``--levels`` linearization level, and reports per level the mean and largest
time and how many solves were not proven within ``--limit`` seconds.

Usage::

    python benchmarks/count_model_seeds.py --m 2 3 4 --seeds 40
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import date

import numpy as np

import republish.models.whole_release as whole_release
import republish.models.whole_release_counts as whole_release_counts
from republish.datasets import dynamic_series, load_adult
from republish.solver.m_invariance import publish_m_invariant

QIS = ["age", "sex", "education", "native-country"]


def collect(initial: int, r: int, releases: int, m: int, limit: float, seed: int,
            mode: str = "auto") -> list:
    """The count models the whole-release model solves along one series."""
    problems = []
    solve = whole_release.optimal_counts

    def spy(problem, **options):  # type: ignore[no-untyped-def]
        problems.append(problem)
        return solve(problem, **options)

    whole_release.optimal_counts = spy  # type: ignore[assignment]
    try:
        table, schema = load_adult(sensitive="occupation", qis=QIS)
        state = None
        for microdata in dynamic_series(table, initial, r, releases, seed):
            state = publish_m_invariant(microdata, schema, m, state, mode=mode,  # type: ignore[arg-type]
                                        time_limit=limit, rng=np.random.default_rng(seed)).state
    finally:
        whole_release.optimal_counts = solve  # type: ignore[assignment]
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", type=int, default=200)
    parser.add_argument("--r", type=int, default=20)
    parser.add_argument("--releases", type=int, default=6)
    parser.add_argument("--m", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--time-limit", type=float, default=1.0)
    parser.add_argument("--mode", choices=["auto", "exact"], default="auto",
                        help="the pipeline whose count models are collected")
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--limit", type=float, default=5.0,
                        help="the count model's time limit in each solve")
    args = parser.parse_args()
    print(f"`python benchmarks/count_model_seeds.py {' '.join(sys.argv[1:])}` — "
          f"{platform.machine()}, {os.cpu_count()} cores, {date.today()}\n")
    print("| m | count models | linearization level | solves | mean s | max s | "
          "not proven |")
    print("|---|---|---|---|---|---|---|")
    default = whole_release_counts.LINEARIZATION_LEVEL
    for m in args.m:
        problems = collect(args.initial, args.r, args.releases, m, args.time_limit, 1,
                           args.mode)
        if not problems:
            print(f"| {m} | 0 | - | 0 | - | - | - |")
            continue
        for level in args.levels:
            whole_release_counts.LINEARIZATION_LEVEL = level
            times, unproven = [], 0
            for problem in problems:
                for s in range(args.seeds):
                    started = time.perf_counter()
                    plan = whole_release_counts.optimal_counts(
                        problem, time_limit=args.limit, seed=1_000_003 * s + 17)
                    times.append(time.perf_counter() - started)
                    unproven += plan.status != "OPTIMAL"
            whole_release_counts.LINEARIZATION_LEVEL = default
            print(f"| {m} | {len(problems)} | {level} | {len(times)} | "
                  f"{np.mean(times):.4f} | {np.max(times):.3f} | {unproven} |", flush=True)


if __name__ == "__main__":
    main()
