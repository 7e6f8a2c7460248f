"""Exact release-step models: solve times, proofs, and the greedy's measured gap.

Sections (each row: instance, size, status, wall time, objective, bound, greedy's
objective and its gap to the proven bound):

* ``buckets`` -- bucket assignment (:mod:`republish.models.bucket_assignment`) on the
  count instances of an Adult (or synthetic census) dynamic series and on synthetic stress
  instances (hundreds to thousands of buckets); greedy = balancing + Algorithm 1/3;
* ``pairs`` -- signature size 2 group formation (priced min-cost flow) on buckets of up to
  20,000 rows of Adult and of uniform points; greedy = §4.3 perimeter split;
* ``groups`` -- signature size >= 3 (set-partitioning MIP, CP-SAT above its column limit),
  Adult rows; above the auto threshold the greedy's gap is measured against the MIP run
  with a longer limit;
* ``partition`` -- first-release m-unique partitions (set-partitioning MIP) of Adult rows;
* ``bound`` -- large size >= 3 buckets of Adult rows: the greedy split against the pairing
  lower bound (:mod:`republish.models.grouping.bound`).

Usage::

    python benchmarks/exact_models.py [--sections buckets pairs groups partition bound]
        [--time-limit 10] [--quick]

Prints a Markdown table per section (copied into benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from republish.datasets import datasets_dir, dynamic_series, load_adult, synthetic_census
from republish.generalization import Domain
from republish.heuristics.division import divide_by_signature
from republish.heuristics.perimeter_split import split_bucket_min_perimeter
from republish.models.bucket_assignment import solve_bucket_assignment
from republish.models.grouping.bound import pairing_lower_bound
from republish.models.grouping.formation import (
    form_groups,
    grouping_objective,
    grouping_problems,
    partition_m_unique,
)
from republish.problems.buckets import BucketCounts
from republish.schema import Schema
from republish.solver.m_invariance import publish_m_invariant
from republish.solver.steps import greedy_counts, partition_step
from republish.state import SIGNATURE
from republish.tables import encode_qis

Row = dict[str, object]


def _gap(greedy: float, bound: float | None) -> str:
    if bound is None or greedy <= 0:
        return "-"
    return f"{100 * max(0.0, greedy - bound) / greedy:.1f}%"


def _table(rows: list[Row]) -> str:
    frame = pd.DataFrame(rows)
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([header, rule, *body])


def _data() -> tuple[pd.DataFrame, Schema, np.ndarray, np.ndarray, str]:
    """Rows, schema, normalized QI codes, sensitive values, and the data set's name."""
    if datasets_dir() is not None:
        table, schema = load_adult()
        name = "adult"
    else:
        table, schema = synthetic_census(30000, seed=0)
        name = "census"
    codes = encode_qis(table, schema)
    domain = Domain.of(schema, codes)
    extent = np.where(domain.high > domain.low, domain.high - domain.low, 1.0)
    points = np.clip((codes - domain.low) / extent, 0, 1)
    return table, schema, points, table[schema.sensitive].astype(str).to_numpy(), name


def bench_buckets(time_limit: float, quick: bool) -> list[Row]:
    table, schema, _, _, name = _data()
    rows: list[Row] = []
    size = 8000 if quick else 20000
    for m in (2, 4, 6):
        series = dynamic_series(table, initial=size, r=size // 10, releases=4, seed=m)
        state = None
        for n, microdata in enumerate(series, 1):
            if state is not None:
                ids = microdata[schema.identifier].astype(str).to_numpy(dtype=object)
                positions = state.positions(ids)
                known = positions >= 0
                record = state.rows.iloc[positions[known]]
                sensitive = microdata[schema.sensitive].astype(str).to_numpy(dtype=object)
                division = divide_by_signature(record[SIGNATURE].to_numpy(), state.signatures,
                                               sensitive[known])
                buckets = [BucketCounts(tuple(sorted(s)), c)
                           for s, c in zip(division.signatures, division.counts, strict=True)]
                new = pd.Series(sensitive[~known]).value_counts().to_dict()
                new = {str(v): int(c) for v, c in new.items()}
                rows.append(_bucket_row(f"{name} m={m} release {n}", buckets, new, m,
                                        time_limit))
            state = publish_m_invariant(microdata, schema, m, previous=state,
                                        rng=np.random.default_rng(n)).state
    rng = np.random.default_rng(0)
    for count in (100, 500) if quick else (100, 500, 2000):
        values = [f"s{i}" for i in range(40)]
        buckets = []
        for _ in range(count):
            signature = tuple(rng.choice(values, int(rng.integers(4, 8)), replace=False))
            counts = {str(v): int(rng.integers(0, 6)) for v in signature}
            counts[signature[0]] = max(1, counts[signature[0]])
            buckets.append(BucketCounts(signature, counts))
        new = {v: int(rng.integers(0, 3 * count // 10 + 2)) for v in values}
        rows.append(_bucket_row(f"synthetic {count} buckets, m=4", buckets, new, 4, time_limit))
    return rows


def _bucket_row(name: str, buckets: list[BucketCounts], new: dict[str, int], m: int,
                time_limit: float) -> Row:
    values = sorted({v for b in buckets for v in b.signature} | set(new))
    greedy = greedy_counts(buckets, new, m, "counterfeit", True, values, 1.0)
    started = time.perf_counter()
    result = solve_bucket_assignment(buckets, new, m, time_limit=time_limit, hint=greedy,
                                     allow_new_values=True, new_values=values)
    wall = time.perf_counter() - started
    return {
        "instance": name, "buckets": len(buckets), "new rows": sum(new.values()),
        "status": result.status, "time s": f"{wall:.2f}", "objective": result.objective,
        "bound": result.bound, "greedy": None if greedy is None else greedy.objective,
        "greedy gap": _gap(greedy.objective, result.bound) if greedy else "-",
    }


def _bucket_rows(points: np.ndarray, sensitive: np.ndarray, values: list[str], k: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    chosen = np.concatenate([rng.choice(np.flatnonzero(sensitive == v), k, replace=False)
                             for v in values])
    return points[chosen], np.repeat(values, k)


def _group_row(name: str, pts: np.ndarray, vals: np.ndarray, time_limit: float,
               **options: object) -> Row:
    greedy = split_bucket_min_perimeter(pts, vals).groups
    greedy_value = grouping_objective(pts, np.zeros(len(vals), bool), greedy, "perimeter")
    started = time.perf_counter()
    result = form_groups(pts, vals, time_limit=time_limit, hint_groups=greedy, **options)  # type: ignore[arg-type]
    wall = time.perf_counter() - started
    return {
        "instance": name, "rows": len(vals), "method": result.method, "status": result.status,
        "time s": f"{wall:.2f}", "objective": f"{result.objective:.4f}",
        "bound": "-" if result.bound is None else f"{result.bound:.4f}",
        "greedy": f"{greedy_value:.4f}", "greedy gap": _gap(greedy_value, result.bound),
    }


def bench_pairs(time_limit: float, quick: bool) -> list[Row]:
    _, _, points, _, name = _data()
    rng = np.random.default_rng(1)
    rows = []
    sizes = (1000, 5000) if quick else (1000, 5000, 10000)
    for k in sizes:
        # Two values' rows drawn from the whole table: the QI geometry of the data set.
        chosen = rng.choice(len(points), 2 * k, replace=False)
        rows.append(_group_row(f"{name} QIs s=2", points[chosen], np.repeat(["a", "b"], k),
                               time_limit))
    for k in sizes:
        pts = rng.random((2 * k, 3))
        rows.append(_group_row("uniform 3 QIs s=2", pts, np.repeat(["a", "b"], k), time_limit))
    if not quick:
        # Beyond the target: the whole of Adult, and continuous codes in 2 and 5 dimensions
        # (no repeated QI vectors, pricing by leaves), with a longer limit.
        k = len(points) // 2
        chosen = rng.choice(len(points), 2 * k, replace=False)
        rows.append(_group_row(f"{name} QIs s=2 (all rows)", points[chosen],
                               np.repeat(["a", "b"], k), 3 * time_limit))
        for d in (2, 5):
            pts = rng.random((20000, d))
            rows.append(_group_row(f"uniform {d} QIs s=2", pts, np.repeat(["a", "b"], 10000),
                                   3 * time_limit))
    return rows


def bench_groups(time_limit: float, quick: bool) -> list[Row]:
    _, _, points, sensitive, name = _data()
    counts = pd.Series(sensitive).value_counts()
    rng = np.random.default_rng(2)
    rows = []
    cases = [(3, 10), (3, 20), (3, 30), (4, 10), (4, 15), (5, 8)]
    if not quick:
        cases += [(3, 40), (5, 10)]
    for s, k in cases:
        values = [str(v) for v in rng.choice(counts.index[:8], s, replace=False)]
        pts, vals = _bucket_rows(points, sensitive, values, k, rng)
        rows.append(_group_row(f"{name} s={s} k={k}", pts, vals, time_limit))
    # Above the exact size: the greedy's gap against a long MIP run, and CP-SAT's result.
    for s, k in [(3, 50), (4, 20)] if not quick else [(3, 50)]:
        values = [str(v) for v in rng.choice(counts.index[:8], s, replace=False)]
        pts, vals = _bucket_rows(points, sensitive, values, k, rng)
        rows.append(_group_row(f"{name} s={s} k={k} (MIP, long)", pts, vals, 6 * time_limit,
                               size_limit=10**6))
        rows.append(_group_row(f"{name} s={s} k={k} (CP-SAT)", pts, vals, time_limit,
                               size_limit=1, cpsat_rows=10**6))
    return rows


def bench_partition(time_limit: float, quick: bool) -> list[Row]:
    _, _, points, sensitive, name = _data()
    rng = np.random.default_rng(3)
    rows: list[Row] = []
    for n, m in [(20, 2), (40, 2), (60, 2), (30, 3), (60, 3)] + ([] if quick else [(100, 2)]):
        for _ in range(20):
            chosen = rng.choice(len(sensitive), n, replace=False)
            vals = sensitive[chosen]
            if pd.Series(vals).value_counts().max() * m <= n:
                break
        pts = points[chosen]
        started = time.perf_counter()
        greedy = partition_step(pts, vals, m, mode="heuristic")
        exact = partition_m_unique(pts, vals, m, time_limit=time_limit,
                                   hint_groups=greedy.groups)
        wall = time.perf_counter() - started
        assert not grouping_problems(vals, np.zeros(n, bool), exact.groups, m)
        rows.append({
            "instance": f"{name} n={n} m={m}", "method": exact.method, "status": exact.status,
            "time s": f"{wall:.2f}", "objective": f"{exact.objective:.4f}",
            "bound": "-" if exact.bound is None else f"{exact.bound:.4f}",
            "greedy (Assign+split)": f"{greedy.objective:.4f}",
            "greedy gap": _gap(greedy.objective, exact.bound),
        })
    return rows


def bench_bound(time_limit: float, quick: bool) -> list[Row]:
    """Large size >= 3 buckets: the greedy split against the pairing lower bound."""
    _, _, points, sensitive, name = _data()
    counts = pd.Series(sensitive).value_counts()
    rng = np.random.default_rng(4)
    rows: list[Row] = []
    cases = [(3, 100), (3, 1000), (4, 500), (5, 300)] + ([] if quick else [(3, 2500)])
    for s, k in cases:
        values = [str(v) for v in counts.index[:s]]
        pts, vals = _bucket_rows(points, sensitive, values, k, rng)
        greedy = split_bucket_min_perimeter(pts, vals).groups
        greedy_value = grouping_objective(pts, np.zeros(len(vals), bool), greedy, "perimeter")
        value_index = pd.Index(values).get_indexer(vals)
        started = time.perf_counter()
        bound = pairing_lower_bound(pts, value_index, np.zeros(len(vals), bool), "perimeter",
                                    time_limit)
        wall = time.perf_counter() - started
        rows.append({
            "instance": f"{name} s={s} k={k}", "rows": len(vals),
            "greedy": f"{greedy_value:.4f}",
            "pairing bound": "-" if bound is None else f"{bound:.4f}",
            "bound time s": f"{wall:.2f}", "greedy gap at most": _gap(greedy_value, bound),
        })
    return rows


SECTIONS: dict[str, Callable[[float, bool], list[Row]]] = {
    "buckets": bench_buckets, "pairs": bench_pairs, "groups": bench_groups,
    "partition": bench_partition, "bound": bench_bound,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="*", default=list(SECTIONS), choices=list(SECTIONS))
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true", help="smaller instances")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f}; time limit {args.time_limit} s, 1 worker")
    for section in args.sections:
        started = time.perf_counter()
        rows = SECTIONS[section](args.time_limit, args.quick)
        print(f"\n### {section} ({time.perf_counter() - started:.0f} s, load "
              f"{os.getloadavg()[0]:.1f})\n")
        print(_table(rows), flush=True)


if __name__ == "__main__":
    main()
