"""Whole-release optimization on Adult: the heuristic pipeline against the exact pipeline
(whole-release model warm-started by it), per release, for objectives (a) and (b).

Series (m-invariance paper, §5.2 protocol, :func:`republish.datasets.dynamic_series`): UCI
Adult, sensitive ``occupation``, QIs ``age, sex, education, native-country``; a first release
of ``--initial`` rows and ``--r`` deletions and insertions per release.

For every m and every pipeline (``heuristic``; ``exact`` with each ``--time-limit``) it
records per release: (a) counterfeits + deferrals, (b) the perimeter of
:mod:`republish.objectives`, the release status, both stages' status, bound and gap, and
the wall time. Prints Markdown for ``benchmarks/RESULTS.md`` and writes the rows to
``--csv``, by default ``benchmarks/whole_release_<data>_<initial>.csv``, or, when that file
exists (``RESULTS.md`` cites these files), to the first free ``..._<n>.csv`` beside it.

Usage::

    python benchmarks/whole_release_adult.py --initial 20000 --r 2000 --releases 6 \\
        --m 2 3 4 5 6 7 --time-limit 10
    python benchmarks/whole_release_adult.py --initial 200 --r 20 --releases 6 \\
        --m 2 3 4 --time-limit 1 --mode auto
    python benchmarks/whole_release_adult.py --initial 200 --r 20 --releases 6 \\
        --m 2 3 4 --time-limit 1 --first-time-limit 60 --mode auto
    python benchmarks/whole_release_adult.py --dataset census --initial 200000 --r 5000 \\
        --releases 3 --m 10 --time-limit 10 60
    python benchmarks/whole_release_adult.py --initial 20000 --r 2000 --releases 6 \\
        --m 3 --time-limit 10 --workers 2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from output_paths import results_path  # benchmarks/ is the script's folder
from run_line import run_line

from republish.datasets import dynamic_series, load_adult, synthetic_census
from republish.solver.m_invariance import publish_m_invariant
from republish.solver.options import FIRST_RELEASES

HERE = Path(__file__).resolve().parent
QIS = ["age", "sex", "education", "native-country"]


def run(initial: int, r: int, releases: int, ms: list[int], limits: list[float], mode: str,
        seed: int, dataset: str = "adult", first_releases: tuple[str, ...] = ("buckets",),
        first_limit: float | None = None, workers: int = 1) -> pd.DataFrame:
    if dataset == "census":
        table, schema = synthetic_census(initial + releases * r, seed=seed)
    else:
        table, schema = load_adult(sensitive="occupation", qis=QIS)
    series = dynamic_series(table, initial, r, releases, seed)
    records = []
    pipelines = [("heuristic", 10.0, "buckets")] + [
        (mode, limit, first) for limit in limits for first in first_releases]
    for m in ms:
        for pipeline, limit, first in pipelines:
            state = None
            for microdata in series:
                started = time.perf_counter()
                budget = first_limit if state is None and first_limit is not None and \
                    pipeline != "heuristic" else limit
                step = publish_m_invariant(microdata, schema, m, state, mode=pipeline,  # type: ignore[arg-type]
                                           time_limit=budget, rng=np.random.default_rng(seed),
                                           first_release=first,
                                           workers=1 if pipeline == "heuristic" else workers)
                state = step.state
                summary = step.summary()
                records.append({
                    "m": m, "pipeline": pipeline if pipeline == "heuristic"
                    else f"{pipeline} {limit:g}s" + ("" if first == "buckets" else f" {first}"),
                    "release": summary["release"], "rows": summary["rows"],
                    "a": summary["objective"], "a_status": summary["counts_status"],
                    "b": summary["cost"], "b_status": summary["cost_status"],
                    "b_bound": summary["cost_bound"], "b_gap": summary["cost_gap"],
                    "status": summary["status"], "time_limit": budget,
                    "time_s": time.perf_counter() - started,
                })
                print(records[-1], file=sys.stderr, flush=True)
    return pd.DataFrame.from_records(records)


def markdown(frame: pd.DataFrame) -> str:
    """Per m and pipeline: totals of (a) and (b), (b) against the heuristic, share of
    releases proven OPTIMAL, median gap of (b), the largest release time."""
    lines = ["| m | pipeline | Σ (a) | Σ (b) | (b) vs heuristic | proven optimal | "
             "median (b) gap | max time s |", "|---|---|---|---|---|---|---|---|"]
    for m, rows in frame.groupby("m"):
        base = rows[rows["pipeline"] == "heuristic"]["b"].sum()
        for pipeline, part in rows.groupby("pipeline", sort=False):
            gaps = part["b_gap"].dropna()
            lines.append(
                f"| {m} | {pipeline} | {part['a'].sum():g} | {part['b'].sum():.1f} | "
                f"{100 * (part['b'].sum() / base - 1):+.1f} % | "
                f"{int((part['status'] == 'OPTIMAL').sum())}/{len(part)} | "
                f"{'-' if gaps.empty else f'{100 * gaps.median():.1f} %'} | "
                f"{part['time_s'].max():.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", type=int, default=20_000)
    parser.add_argument("--r", type=int, default=2_000)
    parser.add_argument("--releases", type=int, default=6)
    parser.add_argument("--m", type=int, nargs="+", default=[2, 3, 4, 5, 6, 7])
    parser.add_argument("--time-limit", type=float, nargs="+", default=[10.0])
    parser.add_argument("--mode", choices=["auto", "exact"], default="exact")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dataset", choices=["adult", "census"], default="adult",
                        help="census: synthetic_census with initial + releases*r rows")
    parser.add_argument("--first-release", nargs="+",
                        choices=list(FIRST_RELEASES),
                        default=["buckets"], help="first-release policies of the model runs")
    parser.add_argument("--first-time-limit", type=float, default=None,
                        help="the model pipelines' budget for the first release (default: "
                        "--time-limit): a publisher may spend a minute once, then seconds")
    parser.add_argument("--workers", type=int, default=1,
                        help="the model pipelines' cores: from 2 a large release's bound runs "
                        "in a second process beside its search (run one series at a time)")
    parser.add_argument("--csv", type=Path, default=None,
                        help="where the rows go (default: whole_release_<data>_<initial>.csv, "
                        "or _2, _3, ... when it exists: never overwrites cited results)")
    args = parser.parse_args()
    frame = run(args.initial, args.r, args.releases, args.m, args.time_limit, args.mode,
                args.seed, args.dataset, tuple(args.first_release), args.first_time_limit,
                args.workers)
    name = "adult" if args.dataset == "adult" else "census"
    out = results_path(args.csv, HERE / f"whole_release_{name}_{args.initial}.csv")
    frame.to_csv(out, index=False)
    print(f"rows written to {out}", file=sys.stderr)
    print(run_line())
    print(markdown(frame))


if __name__ == "__main__":
    main()
