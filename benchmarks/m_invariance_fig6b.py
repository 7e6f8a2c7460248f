"""Counterfeits as m grows (issue 19, item 2; m-invariance paper §5.2, Fig. 6b).

The paper (OCC/SAL, T(1) = 200k, r = 5k, 81 releases) varies m from 2 to 10: the average
number of counterfeits per release "never exceeds 2.5". This script publishes the
census-like series (:func:`republish.datasets.synthetic_census`; ``--distributions``
adds the Adult-skewed SA) with the paper's Assign (``mode='heuristic'``) for m up to 20
and records max and mean counterfeits per release.

Usage (the RESULTS.md run, scaled down 10x: T(1) = 20k, r = 500, the same 81 releases)::

    nice -n 10 .venv/bin/python benchmarks/m_invariance_fig6b.py \
        --rows 60000 --initial 20000 --r 500 --ms 2 4 6 8 10 12 14 16 18 20

At the paper's size, first 41 releases, m = 4, 6, 8 beside the earlier m = 2, 20 runs
(2026-11-25)::

    nice -n 15 .venv/bin/python benchmarks/m_invariance_fig6b.py --rows 600000 \
        --initial 200000 --r 5000 --ms 4 6 8 --max-releases 41 \
        --csv benchmarks/m_invariance_fig6b_full2.csv \
        --also benchmarks/m_invariance_fig6b_full.csv benchmarks/m_invariance_fig6b_full_reuse.csv \
        --figure benchmarks/figures/m_invariance_fig6b_full2.png

(the figure and summary were then redrawn with item 1's m = 10 series, first 41 releases:
the same command with ``--plot-only`` and ``benchmarks/m_invariance_counterfeit_gap_full.csv``
added to ``--also``.)

At the paper's size, all 81 releases, m = 12, 14, 16, 18 (2026-11-26)::

    nice -n 15 .venv/bin/python benchmarks/m_invariance_fig6b.py --rows 600000 \
        --initial 200000 --r 5000 --ms 12 14 16 18 \
        --csv benchmarks/m_invariance_fig6b_full_m12_18.csv \
        --figure benchmarks/figures/m_invariance_fig6b_full_m12_18.png

and every m run at the paper's size in one figure, cut to the first 41 releases (the
releases every m has)::

    .venv/bin/python benchmarks/m_invariance_fig6b.py --plot-only --max-releases 41 \
        --csv benchmarks/m_invariance_fig6b_full_m12_18.csv \
        --also benchmarks/m_invariance_fig6b_full.csv benchmarks/m_invariance_fig6b_full2.csv \
        benchmarks/m_invariance_fig6b_full_reuse.csv \
        benchmarks/m_invariance_counterfeit_gap_full.csv \
        --figure benchmarks/figures/m_invariance_fig6b_full_all.png

Writes ``benchmarks/m_invariance_fig6b.csv`` and ``benchmarks/figures/m_invariance_fig6b.png``
(or, when either exists -- RESULTS.md cites them -- the first free ``..._2.csv`` and
``..._2.png``, ... beside them; ``--csv``/``--figure`` write exactly there). ``--plot-only``
reads ``--csv`` (default: the committed ``m_invariance_fig6b.csv``); redrawing that file
alone (no ``--also``) replaces ``m_invariance_fig6b.png`` on purpose, any other redraw
without ``--figure`` goes to the first free ``m_invariance_fig6b_<n>.png``.
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
from output_paths import resolve_outputs  # noqa: E402

HERE = Path(__file__).resolve().parent


def plot(summary: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    summary = summary.sort_values("m", kind="stable")
    for (distribution, policy), part in summary.groupby(["distribution", "policy"], sort=False):
        axes[0].plot(part["m"], part["mean"], marker="o", label=f"{distribution} ({policy})")
        axes[1].plot(part["m"], part["max"], marker="o", label=f"{distribution} ({policy})")
    axes[0].axhline(2.5, color="grey", linestyle="--", linewidth=0.8, label="paper: mean <= 2.5")
    axes[0].set(xlabel="m", ylabel="mean counterfeits per release", title="Fig. 6b: mean")
    axes[1].set(xlabel="m", ylabel="max counterfeits in a release", title="max")
    for axis in axes:
        axis.set_yscale("symlog", linthresh=1)
        axis.set_ylim(bottom=0)
        axis.legend(fontsize=8)
        axis.grid(alpha=0.3)
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--initial", type=int, default=20_000)
    parser.add_argument("--r", type=int, default=500)
    parser.add_argument("--ms", type=int, nargs="+", default=[2, 4, 6, 8, 10, 12, 14, 16, 18, 20])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--distributions", nargs="+", default=["census"])
    parser.add_argument("--policies", nargs="+", default=["assign"])
    parser.add_argument("--max-releases", type=int, default=None)
    parser.add_argument("--also", type=Path, nargs="*", default=[],
                        help="CSVs of earlier runs summarized and drawn with this one")
    parser.add_argument("--plot-only", action="store_true",
                        help="run nothing: summarize and draw --also (and --csv if it exists)")
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there, read by --plot-only (default: "
                        "m_invariance_fig6b.csv, or the first free m_invariance_fig6b_<n>.csv)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/m_invariance_fig6b.png, "
                        "or the first free m_invariance_fig6b_<n>.png)")
    args = parser.parse_args()
    default_csv = HERE / "m_invariance_fig6b.csv"
    default_figure = HERE / "figures" / "m_invariance_fig6b.png"
    source, written, figure = resolve_outputs(args.csv, args.figure, default_csv,
                                              default_figure, plot_only=args.plot_only,
                                              also=bool(args.also))
    csv_path = written or source  # a redraw reads, a run writes
    if written is not None:
        print(f"writing {csv_path}", file=sys.stderr)
    print(f"figure: {figure}", file=sys.stderr)
    start = time.perf_counter()
    records: list[dict[str, object]] = []
    for distribution in [] if args.plot_only else args.distributions:
        table, schema = series_table(args.rows, args.seed, distribution)
        for policy in args.policies:
            for m in args.ms:
                part = run_series(table, schema, args.initial, args.r, m, args.seed + args.r,
                                  policy=policy, max_releases=args.max_releases,
                                  label=distribution)
                for record in part:
                    record["distribution"] = distribution
                records.extend(part)
                pd.DataFrame(records).to_csv(csv_path, index=False)
    if args.plot_only and csv_path.exists():
        saved = pd.read_csv(csv_path)
        # the same cut as for --also: no release past --max-releases
        records = saved[saved["release"] <= (args.max_releases or saved["release"].max())
                        ].to_dict("records")
    earlier = [pd.read_csv(p) for p in args.also]
    # earlier runs: the same distributions, and no release past --max-releases
    earlier = [e[e["distribution"].isin(args.distributions)
                 & (e["release"] <= (args.max_releases or e["release"].max()))]
               for e in earlier]
    results = pd.concat([*earlier, pd.DataFrame(records)], ignore_index=True)
    summary = counterfeit_summary(results, ["distribution", "policy", "m"])
    plot(summary, figure)
    print()
    print(f"Date {date.today()}, {MACHINE}, total {time.perf_counter() - start:.0f} s")
    print(markdown(summary))


if __name__ == "__main__":
    main()
