"""Speed of the release verifier (:func:`republish.principles.verify_release`) at scale.

Builds, once, a census-like series (:func:`republish.datasets.synthetic_census`, the
domains of the m-invariance paper's Table 5) with a first release of 200k rows and
``r = 40k`` deletions plus insertions for the second (§5 protocol,
:func:`republish.datasets.dynamic_series`), both published by
:func:`republish.solver.m_invariance.publish_m_invariant` with ``m = 10``. Then it times

* ``verify_release(release 1, m)`` (m-uniqueness, counterfeits, hygiene);
* ``verify_release(release 2, m, previous=release 1)`` (Lemma 4's pair check instead of
  m-uniqueness alone);
* ``check_m_invariance_sequence([release 1, release 2], m)`` (``republish verify``),

``--repeats`` times each, and prints the median CPU time (``time.process_time``, the
process's own time, unaffected by other jobs on a shared machine) and wall time. With
``--publish-repeats`` it also times the whole step publishing release 2 again, and its
verify phase (the verifier plus the check against the publisher's state).

Usage::

    python benchmarks/verify_speed.py                       # r = 40k, 200k rows
    python benchmarks/verify_speed.py --cache /tmp/verify_series.pkl   # reuse releases
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from republish.datasets import dynamic_series, synthetic_census
from republish.principles import check_m_invariance_sequence, verify_release
from republish.principles.report import VerificationReport
from republish.release import Release
from republish.solver.m_invariance import publish_m_invariant
from republish.state import PublisherState


@dataclass(frozen=True)
class Series:
    """Two consecutive releases, plus what republishing the second one needs."""

    first: Release
    second: Release
    state: PublisherState
    second_table: pd.DataFrame


def build_series(initial: int, r: int, m: int, seed: int) -> Series:
    """Two consecutive releases of an m-invariant series (the second after r changes)."""
    table, schema = synthetic_census(initial + r, seed=seed)
    first_table, second_table = dynamic_series(table, initial, r, 2, seed=seed)
    rng = np.random.default_rng(seed)
    first = publish_m_invariant(first_table, schema, m, rng=rng, validated=True)
    second = publish_m_invariant(
        second_table, schema, m, first.state, rng=rng, validated=True
    )
    return Series(first.release, second.release, first.state, second_table)


def load_or_build(cache: Path | None, initial: int, r: int, m: int, seed: int) -> Series:
    key = (initial, r, m, seed)
    if cache is not None and cache.is_file():
        with cache.open("rb") as handle:
            stored = pickle.load(handle)
        if isinstance(stored, tuple) and stored[0] == key and isinstance(stored[1], Series):
            return stored[1]
    series = build_series(initial, r, m, seed)
    if cache is not None:
        with cache.open("wb") as handle:
            pickle.dump((key, series), handle)
    return series


def time_publication(series: Series, m: int, repeats: int) -> tuple[float, float, float]:
    """Median CPU seconds of the whole step publishing release 2 and of its verify phase,
    and the median wall seconds of the step."""
    total: list[float] = []
    verify: list[float] = []
    wall: list[float] = []
    schema = series.second.schema
    for repeat in range(repeats):
        marks: list[tuple[str | None, float]] = [("start", time.process_time())]
        wall_start = time.perf_counter()
        publish_m_invariant(
            series.second_table, schema, m, series.state, validated=True,
            rng=np.random.default_rng(repeat),
            progress=lambda phase, marks=marks: marks.append((phase, time.process_time())),
        )
        wall.append(time.perf_counter() - wall_start)
        marks.append(("end", time.process_time()))
        at = dict(marks)
        total.append(at["end"] - at["start"])
        verify.append(at["state"] - at["verify"])
    return statistics.median(total), statistics.median(verify), statistics.median(wall)


def timed(call: Callable[[], VerificationReport], repeats: int) -> tuple[float, float, bool]:
    """Median CPU and wall seconds of ``call`` over ``repeats`` runs, and its ``ok``."""
    cpu: list[float] = []
    wall: list[float] = []
    ok = True
    for _ in range(repeats):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        report = call()
        cpu.append(time.process_time() - cpu_start)
        wall.append(time.perf_counter() - wall_start)
        ok = ok and report.ok
    return statistics.median(cpu), statistics.median(wall), ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--initial", type=int, default=200_000)
    parser.add_argument("--r", type=int, default=40_000)
    parser.add_argument("--m", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--publish-repeats", type=int, default=3,
                        help="also time the whole step publishing release 2 (0: skip)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="pickle the two releases here and reuse them on later runs")
    args = parser.parse_args()

    build_start = time.perf_counter()
    series = load_or_build(args.cache, args.initial, args.r, args.m, args.seed)
    first, second = series.first, series.second
    print(f"releases: {len(first.published)} and {len(second.published)} published rows "
          f"({len(first.published) - len(first.assignment)} and "
          f"{len(second.published) - len(second.assignment)} counterfeits), built or loaded "
          f"in {time.perf_counter() - build_start:.1f} s")

    cases: list[tuple[str, Callable[[], VerificationReport]]] = [
        ("verify_release(release 1)", lambda: verify_release(first, args.m)),
        ("verify_release(release 2, previous=release 1)",
         lambda: verify_release(second, args.m, previous=first)),
        ("check_m_invariance_sequence([1, 2])",
         lambda: check_m_invariance_sequence([first, second], args.m)),
    ]
    print(f"\nMachine: {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
          f"load average {os.getloadavg()[0]:.1f}; date {date.today().isoformat()}; "
          f"median of {args.repeats}\n")
    print("| check | CPU s | wall s | ok |")
    print("|---|---:|---:|---|")
    for name, call in cases:
        cpu, wall, ok = timed(call, args.repeats)
        print(f"| {name} | {cpu:.3f} | {wall:.3f} | {ok} |", flush=True)
    if args.publish_repeats:
        total, verify, wall = time_publication(series, args.m, args.publish_repeats)
        print(f"\npublish_m_invariant(release 2), median of {args.publish_repeats}: "
              f"CPU {total:.2f} s (verify phase {verify:.2f} s), wall {wall:.2f} s")


if __name__ == "__main__":
    main()
