"""Counterfeits AND deferrals per release with reserve deferrals (issue 19, item 1 (ii)).

The m-invariance paper (§5.2, Figs. 5/6a: OCC, 600k rows, T(1) = 200k, r = 5k, m = 10, 81
releases) reports at most 10 counterfeits per release and a mean <= 2.5; it publishes every
new row at once, so it has no deferrals. This script compares, on the same protocol:

* ``assign``   -- the paper's phases (``mode='heuristic'``);
* ``reuse``    -- Assign reusing existing signatures (``assign='reuse'``);
* ``reserve``  -- ``reuse`` plus reserve deferrals
  (:mod:`republish.heuristics.reserve_deferral`, a deviation from the paper: after
  balancing, up to ``ceil(f * sqrt(demand_v))`` leftover rows of each value ``v`` are held
  back, unpublished, to fill the next releases' deficits instead of opening buckets);
* ``reserve-paper`` -- the same reserve on the paper's Assign;
* ``reserve-rare`` -- ``reserve`` that also holds back every leftover row of a value
  expected less than twice among a release's new rows (it never opens a bucket on it).

Both costs are recorded per release: counterfeits (all present in ``T*(j)``, as the paper's
``R(j)`` counts them; split into balancing's and eligibility's) and deferrals (rows of
``T(j)`` not in ``T*(j)``), with the deficit slots (``demand``) that balancing met.

Usage: the 2026-11-25 runs, the paper's size (600k rows, T(1) = 200k, r = 5k, 81 releases),
seed 1; each ``nice -n 15 .venv/bin/python benchmarks/m_invariance_reserve.py`` with::

    --distributions census --policies reserve --factors 2 4
    --distributions adult-occupation-50 --policies reserve --factors 2 4
    --distributions adult-occupation-50 census --policies reuse
    --distributions adult-occupation-50 --policies reserve-rare --factors 4
    --distributions adult-occupation --policies reserve --factors 2
    --distributions adult-occupation --policies reuse reserve reserve-rare --factors 2 \
        --eligibility hybrid
    --distributions census --m 20 --policies reserve --factors 2 --max-releases 41
    --distributions census --m 20 --policies reserve --factors 2 --max-releases 41 \
        --eligibility hybrid
    --distributions census --policies reuse reserve --factors 2 --seed 2
    --distributions census --policies reserve --factors 4 --seed 2
    --distributions adult-occupation-50 --policies reserve-rare --factors 4 --seed 2

(run two at a time with ``--csv`` to separate files, then concatenated; rows of other keys
are kept, so running them one after another with the same ``--csv`` gives the same file).
``--plot-only`` redraws the figure and prints the summary. ``--eligibility hybrid`` lets
the eligibility step defer too; ``--m`` defaults to 10, 7 for ``adult-occupation``.
Writes ``benchmarks/m_invariance_reserve.csv`` and ``benchmarks/figures/m_invariance_reserve.png``
(or, when either exists -- RESULTS.md cites them -- the first free ``..._2.csv`` and
``..._2.png``, ... beside them; ``--csv``/``--figure`` write exactly there). Rows of other
keys are kept from ``--csv`` (default: the committed ``m_invariance_reserve.csv``).
``--plot-only`` reads ``--csv``; redrawing the committed CSV replaces its figure on purpose.
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
    markdown,
    run_series,
    save_figure,
    series_table,
)
from output_paths import free_paths, redraw_path  # noqa: E402

HERE = Path(__file__).resolve().parent
KEYS = ["distribution", "m", "r", "initial", "seed", "policy", "reserve_factor", "eligibility"]


def read(path: Path) -> pd.DataFrame:
    """A results CSV; rows written before the ``seed`` column are seed 1."""
    frame = pd.read_csv(path)
    frame["seed"] = frame["seed"].fillna(1).astype(int) if "seed" in frame else 1
    return frame


def summary(results: pd.DataFrame) -> pd.DataFrame:
    grouped = results.groupby(KEYS, sort=False)
    return pd.DataFrame({
        "releases": grouped["release"].count(),
        "cf_max": grouped["counterfeits"].max(),
        "cf_mean": grouped["counterfeits"].mean().round(2),
        "cf_zero": grouped["counterfeits"].apply(lambda c: int((c == 0).sum())),
        "cf_balancing_mean": grouped["balancing_counterfeits"].mean().round(2),
        "def_max": grouped["deferred"].max(),
        "def_mean": grouped["deferred"].mean().round(1),
        "oldest_held": grouped["oldest_held"].max(),
        "signatures": grouped["signatures"].last(),
        "cpu_s_median": grouped["cpu_s"].median().round(2),
    }).reset_index()


def label(row: pd.Series) -> str:
    text = str(row["policy"])
    if str(row["policy"]).startswith("reserve"):
        text += f" f={row['reserve_factor']:g}"
    if row["eligibility"] != "counterfeit":
        text += f" ({row['eligibility']})"
    return text


def plot(results: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = results[results["seed"] == 1]  # the figure: seed 1 only
    panels = list(results.groupby(["distribution", "m"], sort=False))
    if not panels:
        return
    figure, axes = plt.subplots(3, len(panels), figsize=(5.8 * len(panels), 10),
                                squeeze=False, sharex=True)
    for column, ((distribution, m), part) in enumerate(panels):
        top, middle, bottom = (axes[row][column] for row in range(3))
        for _, line in part.groupby(["policy", "reserve_factor", "eligibility"], sort=False):
            name = label(line.iloc[0])
            for axis, field in ((top, "counterfeits"), (middle, "deferred"),
                                (bottom, "demand")):
                axis.plot(line["release"], line[field], marker=".", markersize=3,
                          linewidth=0.9, label=name)
        top.axhline(10, color="grey", linestyle="--", linewidth=0.8, label="paper max (10)")
        top.set(ylabel="counterfeits in T*(j)", yscale="symlog",
                title=f"{distribution}, m={m}, r={part['r'].iloc[0]}, "
                      f"T(1)={part['initial'].iloc[0]}")
        middle.set(ylabel="deferred rows (not in T*(j))")
        bottom.set(xlabel="release", ylabel="deficit slots balancing met", ylim=(0, None))
        for axis in (top, middle, bottom):
            axis.grid(alpha=0.3)
            axis.legend(fontsize=7)
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=600_000)
    parser.add_argument("--initial", type=int, default=200_000)
    parser.add_argument("--r", type=int, default=5_000)
    parser.add_argument("--m", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--distributions", nargs="+", default=["census", "adult-occupation-50"])
    parser.add_argument("--policies", nargs="+", default=["reserve"])
    parser.add_argument("--factors", nargs="+", type=float, default=[2.0])
    parser.add_argument("--eligibility", default="counterfeit",
                        choices=["counterfeit", "delete", "hybrid"])
    parser.add_argument("--max-releases", type=int, default=None)
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there, read for the kept rows and by --plot-only "
                        "(default: rows kept from m_invariance_reserve.csv, written to the "
                        "first free m_invariance_reserve_<n>.csv when it exists)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/m_invariance_reserve.png, "
                        "or the first free m_invariance_reserve_<n>.png)")
    parser.add_argument("--plot-only", action="store_true")
    args = parser.parse_args()
    default_csv = HERE / "m_invariance_reserve.csv"
    default_figure = HERE / "figures" / "m_invariance_reserve.png"
    source = args.csv or default_csv
    if args.plot_only:
        out = source  # read, not written
        figure = redraw_path(args.figure, default_figure, data=source, committed=default_csv)
    else:
        free_csv, free_figure = free_paths(default_csv, default_figure)
        out, figure = args.csv or free_csv, args.figure or free_figure
        print(f"writing {out}", file=sys.stderr)
    print(f"figure: {figure}", file=sys.stderr)
    start = time.perf_counter()
    records: list[dict[str, object]] = []
    for distribution in [] if args.plot_only else args.distributions:
        m = args.m or (7 if distribution == "adult-occupation" else 10)
        table, schema = series_table(args.rows, args.seed, distribution)
        for policy in args.policies:
            factors = args.factors if policy.startswith("reserve") else [0.0]
            for factor in factors:
                part = run_series(table, schema, args.initial, args.r, m, args.seed + args.r,
                                  policy=policy, max_releases=args.max_releases,
                                  label=distribution, eligibility=args.eligibility,
                                  reserve_factor=factor)
                for record in part:
                    record["distribution"] = distribution
                    record["initial"] = args.initial
                    record["seed"] = args.seed
                records.extend(part)
                # Written after every series: a long run keeps what it finished.
                frame = pd.DataFrame(records)
                # the kept rows: the previous series of this run, else those of --csv
                previous = out if out.exists() else source
                if previous.exists():
                    old = read(previous)
                    fresh = set(map(tuple, frame[KEYS].drop_duplicates().astype(str)
                                    .to_numpy().tolist()))
                    old = old[[tuple(k) not in fresh
                               for k in old[KEYS].astype(str).to_numpy().tolist()]]
                    frame = pd.concat([old, frame], ignore_index=True)
                frame.to_csv(out, index=False)
                records = []
    results = read(out)
    plot(results, figure)
    print()
    print(f"Date {date.today()}, {MACHINE}, total {time.perf_counter() - start:.0f} s")
    print(markdown(summary(results)))


if __name__ == "__main__":
    main()
