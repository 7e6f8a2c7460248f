"""Time per release as m varies (issue 19, item 4; m-invariance paper §5.2, Fig. 9b).

The paper (3 GHz CPU, 2007; OCC/SAL, T(1) = 200k, r = 5k) fixes r = 5k and plots the
average time of computing a release against m (2..10): the cost *decreases* as m grows
("a larger m necessitates fewer buckets, and requires a smaller number of bucket
splits"), always under 12 s. This script times ``publish_m_invariant`` (the paper's
phases, ``mode='heuristic'``) at the paper's size on the census-like table, releases
2..``--max-releases`` of the series (release 1 has no previous release and is reported
apart), for m up to 20: wall time of the computation (verification excluded, as the
paper's CG algorithm has none), the verification, and the process's CPU time.

Usage::

    nice -n 10 .venv/bin/python benchmarks/m_invariance_fig9b.py --max-releases 4

Writes ``benchmarks/m_invariance_fig9b.csv`` and ``benchmarks/figures/m_invariance_fig9b.png``
(or, when either exists -- RESULTS.md cites them -- the first free ``..._2.csv`` and
``..._2.png``, ... beside them; ``--csv``/``--figure`` write exactly there).
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
from output_paths import free_paths  # noqa: E402

HERE = Path(__file__).resolve().parent


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for m, part in results.groupby("m"):
        later = part[part["release"] > 1]
        first = part[part["release"] == 1].iloc[0]
        compute = later["wall_s"] - later["verify_s"]
        rows.append({
            "m": m, "releases timed": len(later),
            "median compute wall s": round(float(compute.median()), 2),
            "median verify wall s": round(float(later["verify_s"].median()), 2),
            "median CPU s (compute+verify)": round(float(later["cpu_s"].median()), 2),
            "release 1 compute wall s": round(float(first["wall_s"] - first["verify_s"]), 2),
            "groups": int(later["groups"].median()),
            "signatures": int(later["signatures"].iloc[-1]),
            "load avg": round(float(part["load_average"].mean()), 1),
        })
    return pd.DataFrame(rows)


def plot(summary: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    axis.plot(summary["m"], summary["median compute wall s"], marker="o", label="compute (wall)")
    axis.plot(summary["m"], summary["median CPU s (compute+verify)"], marker="s",
              label="compute + verify (CPU)")
    axis.plot(summary["m"], summary["median verify wall s"], marker="^", label="verify (wall)")
    axis.axhline(12, color="grey", linestyle="--", linewidth=0.8, label="paper: < 12 s")
    axis.set(xlabel="m", ylabel="seconds per release",
             title="Fig. 9b: time per release (T(1)=200k, r=5k)")
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3)
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=600_000)
    parser.add_argument("--initial", type=int, default=200_000)
    parser.add_argument("--r", type=int, default=5_000)
    parser.add_argument("--ms", type=int, nargs="+", default=[2, 4, 6, 8, 10, 12, 14, 16, 18, 20])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-releases", type=int, default=4)
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there (default: m_invariance_fig9b.csv, "
                        "or the first free m_invariance_fig9b_<n>.csv)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/m_invariance_fig9b.png, "
                        "or the first free m_invariance_fig9b_<n>.png)")
    args = parser.parse_args()
    free_csv, free_figure = free_paths(HERE / "m_invariance_fig9b.csv",
                                       HERE / "figures" / "m_invariance_fig9b.png")
    out, figure = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure}", file=sys.stderr)
    start = time.perf_counter()
    table, schema = series_table(args.rows, args.seed, "census")
    records: list[dict[str, object]] = []
    for m in args.ms:
        records.extend(run_series(table, schema, args.initial, args.r, m, args.seed + args.r,
                                  max_releases=args.max_releases, label="census"))
        pd.DataFrame(records).to_csv(out, index=False)
    summary = summarize(pd.DataFrame(records))
    plot(summary, figure)
    print()
    print(f"Date {date.today()}, {MACHINE}, total {time.perf_counter() - start:.0f} s")
    print(markdown(summary))


if __name__ == "__main__":
    main()
