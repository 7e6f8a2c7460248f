"""The r = 5k counterfeit gap (issue 19, item 1; m-invariance paper §5.2, Figs. 5 and 6a).

The paper (OCC, 600k rows, T(1) = 200k, r = 5k, m = 10, 81 releases): at most 10
counterfeits per release, 51 releases without any, mean <= 2.5 (Fig. 6a). The project's
census-like table with a nearly uniform SA gave max 89, mean 17.2. This script tests the
explanation "the synthetic SA is too uniform" by rerunning the protocol on SAs with the
skew of a real occupation column (Adult's, :func:`republish.datasets.sensitive_shares`),
and compares three publishers per series:

* ``assign``  -- the paper's phases (``mode='heuristic'``, Fig. 3 Assign);
* ``reuse``   -- the same with Assign reusing existing signatures
  (:mod:`republish.heuristics.assign_reuse`, swapped in by a benchmark-only wrapper);
* ``exact``   -- ``mode='exact'`` (bucket-assignment count model + whole-release model),
  ``--time-limit`` s per release.

Usage (the RESULTS.md run is scaled down 10x: same r/T(1) ratio and number of releases)::

    nice -n 10 .venv/bin/python benchmarks/m_invariance_counterfeit_gap.py \
        --rows 60000 --initial 20000 --r 500 \
        --distributions census adult-occupation-50 adult-occupation --policies assign reuse

The 14-value Adult series with the reuse policy at the paper's size (2026-11-25; the
records now split counterfeits into balancing's and eligibility's)::

    nice -n 15 .venv/bin/python benchmarks/m_invariance_counterfeit_gap.py \
        --rows 600000 --initial 200000 --r 5000 --distributions adult-occupation \
        --policies reuse --csv benchmarks/m_invariance_counterfeit_gap_full2.csv \
        --figure benchmarks/figures/m_invariance_counterfeit_gap_full2.png

Writes ``benchmarks/m_invariance_counterfeit_gap.csv`` (rows of other labels are kept)
and ``benchmarks/figures/m_invariance_counterfeit_gap.png``.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from m_invariance_common import (  # noqa: E402
    MACHINE,
    counterfeit_summary,
    markdown,
    run_series,
    save_figure,
    series_table,
)

HERE = Path(__file__).resolve().parent
KEYS = ["distribution", "m", "r", "initial", "policy"]


def plot(results: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(results.groupby(["distribution", "m", "initial"], sort=False))
    figure, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for axis, ((distribution, m, initial), part) in zip(axes[0], panels, strict=True):
        for policy, line in part.groupby("policy", sort=False):
            axis.plot(line["release"], line["counterfeits"], marker=".", label=policy)
        axis.axhline(10, color="grey", linestyle="--", linewidth=0.8, label="paper max (10)")
        axis.set(xlabel="release", ylabel="counterfeits",
                 title=f"{distribution}, m={m}, T(1)={initial}, r={part['r'].iloc[0]}")
        axis.legend()
        axis.grid(alpha=0.3)
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--initial", type=int, default=20_000)
    parser.add_argument("--r", type=int, default=500)
    parser.add_argument("--m", type=int, default=None,
                        help="default: 10, or 7 for adult-occupation (its largest eligible m)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--distributions", nargs="+",
                        default=["census", "adult-occupation-50", "adult-occupation"])
    parser.add_argument("--policies", nargs="+", default=["assign", "reuse"])
    parser.add_argument("--time-limit", type=float, default=3.0)
    parser.add_argument("--max-releases", type=int, default=None)
    parser.add_argument("--csv", type=Path, default=HERE / "m_invariance_counterfeit_gap.csv")
    parser.add_argument("--figure", type=Path,
                        default=HERE / "figures" / "m_invariance_counterfeit_gap.png")
    args = parser.parse_args()
    start = time.perf_counter()
    records: list[dict[str, object]] = []
    for distribution in args.distributions:
        m = args.m or (7 if distribution == "adult-occupation" else 10)
        table, schema = series_table(args.rows, args.seed, distribution)
        for policy in args.policies:
            part = run_series(table, schema, args.initial, args.r, m, args.seed + args.r,
                              policy=policy, max_releases=args.max_releases,
                              time_limit=args.time_limit, label=distribution)
            for record in part:
                record["distribution"] = distribution
                record["initial"] = args.initial
            records.extend(part)
    results = pd.DataFrame(records)
    if args.csv.exists():
        old = pd.read_csv(args.csv)
        fresh = set(map(tuple, results[KEYS].drop_duplicates().to_numpy().tolist()))
        old = old[[tuple(k) not in fresh for k in old[KEYS].to_numpy().tolist()]]
        results = pd.concat([old, results], ignore_index=True)
    results.to_csv(args.csv, index=False)
    plot(results, args.figure)
    print()
    print(f"Date {date.today()}, {MACHINE}, total {time.perf_counter() - start:.0f} s")
    print(markdown(counterfeit_summary(results, KEYS)))


if __name__ == "__main__":
    main()
