"""CPU of the §4.3 split (``heuristics/perimeter_split.py``) on the inputs a census release
gives it, against the reference implementation kept in ``tests/test_perimeter_split_speed.py``
(the code before the 2026-11-25 rewrite), with the outputs compared.

Usage::

    nice -n 5 python benchmarks/split_speed.py --rows 200000 2000000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from datetime import date
from pathlib import Path

import numpy as np

import republish.solver.m_invariance_rows as rows_module
from republish.datasets import synthetic_census
from republish.heuristics import perimeter_split
from republish.solver.m_invariance import publish_m_invariant

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import test_perimeter_split_speed as reference  # noqa: E402


def split_inputs(rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``(points, values, buckets)`` the first release of ``rows`` census rows splits."""
    captured: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    original = rows_module.split_buckets_min_perimeter

    def capture(points, values, buckets, rank=None):  # type: ignore[no-untyped-def]
        captured.append((points.copy(), np.asarray(values).copy(), np.asarray(buckets).copy()))
        return original(points, values, buckets, rank)

    rows_module.split_buckets_min_perimeter = capture  # type: ignore[assignment]
    try:
        table, schema = synthetic_census(rows, seed=0)
        publish_m_invariant(table, schema, 10, None, mode="heuristic")
    finally:
        rows_module.split_buckets_min_perimeter = original
    return captured[0]


def cpu(function, *args):  # type: ignore[no-untyped-def]
    before = os.times()
    result = function(*args)
    after = os.times()
    return result, after.user - before.user + after.system - before.system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[200_000, 2_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"`python benchmarks/split_speed.py {' '.join(sys.argv[1:])}` — "
          f"{platform.machine()}, {os.cpu_count()} cores, {date.today()}\n")
    print("| rows | reference CPU s (median) | current CPU s (median) | identical |")
    print("|---|---|---|---|")
    for n in args.rows:
        points, values, buckets = split_inputs(n)
        old, new = [], []
        for _ in range(args.repeat):  # alternated, so load changes hit both alike
            expected, seconds = cpu(reference.split_buckets_min_perimeter, points, values,
                                    buckets)
            old.append(seconds)
            found, seconds = cpu(perimeter_split.split_buckets_min_perimeter, points, values,
                                 buckets)
            new.append(seconds)
        same = bool(np.array_equal(found.groups, expected.groups)
                    and found.group_count == expected.group_count
                    and found.levels == expected.levels)
        print(f"| {n:,} | {np.median(old):.2f} | {np.median(new):.2f} | {same} |")


if __name__ == "__main__":
    main()
