"""CPU time of the verify phase of an m-invariant release step at 2M rows (issue 17).

Builds (once, cached with ``--cache``) a census-like series: ``synthetic_census(2.4M,
seed=0)``, ``dynamic_series(table, 2M, 400k, 2, 0)``, releases 1 and 2 published by
``publish_m_invariant(..., m=10, mode="heuristic")``. Then it times what
:func:`republish.solver.release_step` runs in its ``verify`` phase for release 2, i.e.
``PRINCIPLE.check_step(release 2, state after release 1, m, positions)``
(``verify_release`` + ``check_against_state``), and also
``verify_release(release 2, m, previous=release 1)``. ``--profile`` prints the cProfile
of one ``check_step`` restricted to ``republish/principles``.

Usage::

    nice -n 5 .venv/bin/python benchmarks/verify_release_speed.py --cache /tmp/verify_2m.pkl
    nice -n 5 .venv/bin/python benchmarks/verify_release_speed.py --cache /tmp/verify_2m.pkl \
        --profile
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pickle
import platform
import pstats
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from republish.datasets import dynamic_series, synthetic_census
from republish.principles import verify_release
from republish.principles.catalog.m_invariance import PRINCIPLE, MInvarianceOptions
from republish.solver.m_invariance import publish_m_invariant


def build(rows: int, r: int, m: int, seed: int) -> dict[str, Any]:
    table, schema = synthetic_census(rows + r, seed=seed)
    first_table, second_table = dynamic_series(table, rows, r, 2, seed)
    first = publish_m_invariant(first_table, schema, m, mode="heuristic", validated=True,
                                rng=np.random.default_rng(seed))
    second = publish_m_invariant(second_table, schema, m, first.state, mode="heuristic",
                                 validated=True, rng=np.random.default_rng(seed + 1))
    return {"first": first.release, "second": second.release, "state": first.state}


def load_or_build(cache: Path | None, rows: int, r: int, m: int, seed: int) -> dict[str, Any]:
    key = (rows, r, m, seed)
    if cache is not None and cache.is_file():
        with cache.open("rb") as handle:
            stored = pickle.load(handle)
        if stored[0] == key:
            return stored[1]
    series = build(rows, r, m, seed)
    if cache is not None:
        with cache.open("wb") as handle:
            pickle.dump((key, series), handle, protocol=pickle.HIGHEST_PROTOCOL)
    return series


def timed(call: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    cpu, wall, result = [], [], None
    for _ in range(repeats):
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        result = call()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    return statistics.median(cpu), statistics.median(wall), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--r", type=int, default=400_000)
    parser.add_argument("--m", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    start = time.perf_counter()
    series = load_or_build(args.cache, args.rows, args.r, args.m, args.seed)
    first, second, state = series["first"], series["second"], series["state"]
    print(f"releases: {len(first.published)} / {len(second.published)} published rows, "
          f"built or loaded in {time.perf_counter() - start:.1f} s")
    options = MInvarianceOptions(m=args.m)
    ids = second.assignment[second.schema.identifier].astype(str).to_numpy(dtype=object)
    positions = state.positions(ids)

    def step() -> Any:
        return PRINCIPLE.check_step(second, state, options, positions)

    if args.profile:
        step()  # warm up as in a step: cached signatures, hashed strings
        profile = cProfile.Profile()
        profile.enable()
        step()
        profile.disable()
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out).sort_stats("cumulative")
        stats.print_stats(40)
        print(out.getvalue())
        return
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("check_step(release 2, state 1) [verify phase]", step),
        ("verify_release(release 2, previous=release 1)",
         lambda: verify_release(second, args.m, previous=first)),
    ]
    print(f"\nMachine: {os.cpu_count()} cores ({platform.machine()}), load "
          f"{os.getloadavg()[0]:.1f}; median of {args.repeats}\n")
    print("| check | CPU s | wall s | ok |")
    print("|---|---:|---:|---|")
    for name, call in cases:
        cpu, wall, report = timed(call, args.repeats)
        print(f"| {name} | {cpu:.2f} | {wall:.2f} | {report.ok} |", flush=True)


if __name__ == "__main__":
    main()
