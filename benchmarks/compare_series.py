"""Heuristic vs exact m-invariant pipelines on the issue's series (``republish compare``).

Two series (m-invariance paper, §5.2 protocol, :func:`republish.datasets.dynamic_series`):

* ``adult`` -- UCI Adult (ARX edition, 30,162 rows), sensitive ``occupation``, QIs
  ``age, sex, education, native-country`` (those of ``m_invariance_adult.py``), a first
  release of 20,000 rows and ``r = 2,000`` deletions and insertions per release until the
  pool is used up (6 releases), for each m in ``--m`` (default 2..7);
* ``census`` -- the synthetic census (:func:`republish.datasets.synthetic_census`), a first
  release of 200,000 rows, ``r = 5,000``, ``--releases`` releases, m = 10.

For every m both pipelines run through :func:`republish.solver.compare.compare_pipelines`
(heuristic: the paper's greedy phases; exact: bucket assignment + group formation models
hinted by them, one ``--time-limit`` budget per release step). Reports per release and in
total: counterfeits, deferrals, mean perimeter, query error, status of the counts model
and of the grouping, and wall time.

Usage::

    python benchmarks/compare_series.py --dataset adult [--m 2 3 4 5 6 7]
        [--eligibility hybrid] [--time-limit 10]
    python benchmarks/compare_series.py --dataset census --m 10 --releases 11

Writes ``benchmarks/compare_<dataset>_<eligibility>.csv`` and the figure
``benchmarks/figures/compare_<dataset>_<eligibility>_m<last m>.png`` (or, when either exists
-- RESULTS.md cites them -- the first free ``..._2.csv`` and ``..._2.png``, ... beside them;
``--csv``/``--figure`` write exactly there); prints Markdown tables for
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

import pandas as pd
from batch_throughput import markdown  # benchmarks/ is the script's folder
from output_paths import free_paths

from republish.datasets import load_adult, synthetic_census
from republish.solver.compare import compare_pipelines, plot_comparison

HERE = Path(__file__).resolve().parent
ADULT_QIS = ["age", "sex", "education", "native-country"]


def _series(dataset: str, releases: int | None, initial: int | None, r: int | None
            ) -> tuple[pd.DataFrame, object, int, int, int]:
    if dataset == "adult":
        table, schema = load_adult(sensitive="occupation", qis=ADULT_QIS)
        initial = initial or 20_000
        r = r or 2_000
        releases = releases or 1 + (len(table) - initial) // r
    else:
        initial = initial or 200_000
        r = r or 5_000
        releases = releases or 11
        table, schema = synthetic_census(initial + (releases - 1) * r, seed=1)
    return table, schema, initial, r, releases


def _summary(frame: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (m, pipeline), part in frame.groupby(["m", "pipeline"], sort=False):
        rows.append({
            "m": m, "pipeline": pipeline, "releases": len(part),
            "counterfeits (total / max)": f"{part['counterfeits'].sum()} / "
                                          f"{part['counterfeits'].max()}",
            "deferrals (total / max)": f"{part['deferred'].sum()} / {part['deferred'].max()}",
            "mean perimeter": f"{part['mean_perimeter'].mean():.4f}",
            "query error": f"{part['query_error'].mean():.4f}",
            "counts proven optimal": "-" if pipeline == "heuristic" else
            f"{(part['status'] == 'OPTIMAL').sum()}/{len(part)}",
            "grouping proven optimal": "-" if pipeline == "heuristic" else
            f"{(part['grouping_status'] == 'OPTIMAL').sum()}/{len(part)}",
            "time s (median / max)": f"{part['wall_time_s'].median():.2f} / "
                                     f"{part['wall_time_s'].max():.2f}",
        })
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=("adult", "census"), default="adult")
    parser.add_argument("--m", type=int, nargs="+", default=None)
    parser.add_argument("--eligibility", choices=("counterfeit", "delete", "hybrid"),
                        default="hybrid")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--releases", type=int, default=None)
    parser.add_argument("--initial", type=int, default=None)
    parser.add_argument("--r", type=int, default=None)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there (default: compare_<dataset>_<eligibility>"
                        ".csv, or the first free ..._<n>.csv when it exists)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/compare_<dataset>_"
                        "<eligibility>_m<last m>.png, or the first free ..._<n>.png)")
    args = parser.parse_args()
    ms = args.m or ([2, 3, 4, 5, 6, 7] if args.dataset == "adult" else [10])
    stem = f"compare_{args.dataset}_{args.eligibility}"
    free_csv, free_figure = free_paths(HERE / f"{stem}.csv",
                                       HERE / "figures" / f"{stem}_m{ms[-1]}.png")
    out, figure = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure}", file=sys.stderr)
    table, schema, initial, r, releases = _series(args.dataset, args.releases, args.initial,
                                                  args.r)
    began = time.perf_counter()
    frames = []
    for m in ms:
        started = time.perf_counter()
        frame = compare_pipelines(table, schema, m, initial, r, releases,  # type: ignore[arg-type]
                                  args.time_limit, args.seed, queries=args.queries,
                                  eligibility=args.eligibility)
        frame.insert(0, "m", m)
        frames.append(frame)
        print(f"m={m}: {time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f}",
              flush=True)
    results = pd.concat(frames, ignore_index=True)
    results.to_csv(out, index=False)
    figure.parent.mkdir(parents=True, exist_ok=True)
    plot_comparison(results[results["m"] == ms[-1]], figure)
    print(f"\n{platform.machine()}, {os.cpu_count()} cores, {date.today()}, "
          f"{time.perf_counter() - began:.0f} s, time limit {args.time_limit} s per step, "
          f"{args.dataset} initial={initial} r={r} releases={releases}, "
          f"eligibility {args.eligibility}\n")
    print(markdown(_summary(results), digits=6))
    per_release = results[["m", "pipeline", "release", "counterfeits", "deferred",
                           "mean_perimeter", "status", "grouping_status", "grouping_gap",
                           "wall_time_s"]].copy()
    per_release["mean_perimeter"] = per_release["mean_perimeter"].round(4)
    per_release["grouping_gap"] = per_release["grouping_gap"].round(4)
    per_release["wall_time_s"] = per_release["wall_time_s"].round(2)
    print()
    print(markdown(per_release, digits=6))


if __name__ == "__main__":
    main()
