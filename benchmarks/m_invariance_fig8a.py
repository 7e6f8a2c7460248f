"""Query error as the expected selectivity θ varies (issue 19, item 3; m-invariance paper
§5.2, Fig. 8a).

The paper (T(1) = 200k, r = 5k, m = 10): the average over the timestamps of the workload
error (median relative error of a workload of COUNT queries, answered from T*(j) and R(j)
against T(j)) falls as θ grows ("a higher θ leads to larger query results"); at θ = 10% it
is at most 10% at every timestamp (Fig. 7). This script publishes the census-like series
with the paper's phases (``mode='heuristic'``) and, on every ``--every``-th release, measures
:func:`republish.metrics.query_error` for each θ (``--queries`` queries per workload, the
paper uses 10,000; the same seed per release for every θ).

Usage (the RESULTS.md run: the paper's sizes, first 11 releases)::

    nice -n 10 .venv/bin/python benchmarks/m_invariance_fig8a.py --max-releases 11 --every 5

The SAL panel (``--sensitive income``: the census-like table's income SA, 50 values
correlated with age; 2026-11-25 run, the OCC rows of the default CSV drawn beside it)::

    nice -n 15 .venv/bin/python benchmarks/m_invariance_fig8a.py --max-releases 11 --every 5 \
        --sensitive income --csv benchmarks/m_invariance_fig8a_sal.csv \
        --also benchmarks/m_invariance_fig8a.csv \
        --figure benchmarks/figures/m_invariance_fig8a_sal.png

Writes ``benchmarks/m_invariance_fig8a.csv`` and ``benchmarks/figures/m_invariance_fig8a.png``
(or, when either exists -- RESULTS.md cites them -- the first free ``..._2.csv`` and
``..._2.png``, ... beside them; ``--csv``/``--figure`` write exactly there).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

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

from republish.metrics import query_error  # noqa: E402

HERE = Path(__file__).resolve().parent
THETAS = (0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2)


def plot(summary: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    for (distribution, m), part in summary.groupby(["distribution", "m"], sort=False):
        axis.plot(100 * part["theta"], 100 * part["mean_error"], marker="o",
                  label=f"{distribution}, m={m}")
    axis.set(xlabel="expected selectivity θ (%)", ylabel="average workload error (%)",
             title="Fig. 8a: query error vs selectivity (r = 5k)")
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3)
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=600_000)
    parser.add_argument("--initial", type=int, default=200_000)
    parser.add_argument("--r", type=int, default=5_000)
    parser.add_argument("--m", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--distributions", nargs="+", default=["census"])
    parser.add_argument("--thetas", type=float, nargs="+", default=list(THETAS))
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--max-releases", type=int, default=11)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--sensitive", default="occupation", choices=["occupation", "income"])
    parser.add_argument("--also", type=Path, nargs="*", default=[],
                        help="CSVs of earlier runs drawn in the same figure")
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there (default: m_invariance_fig8a.csv, "
                        "or the first free m_invariance_fig8a_<n>.csv)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/m_invariance_fig8a.png, "
                        "or the first free m_invariance_fig8a_<n>.png)")
    args = parser.parse_args()
    free_csv, free_figure = free_paths(HERE / "m_invariance_fig8a.csv",
                                       HERE / "figures" / "m_invariance_fig8a.png")
    out, figure = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure}", file=sys.stderr)
    start = time.perf_counter()
    errors: list[dict[str, object]] = []
    for distribution in args.distributions:
        table, schema = series_table(args.rows, args.seed, distribution, args.sensitive)
        if args.sensitive != "occupation":
            distribution = f"{distribution}/{args.sensitive}"

        def keep(number: int, microdata: pd.DataFrame, result: Any,
                 distribution: str = distribution, schema: Any = schema) -> None:
            if (number - 1) % args.every:
                return
            release = result.release
            for theta in args.thetas:
                error = query_error(microdata, release.published, release.counterfeits, schema,
                                    count=args.queries, selectivity=theta, seed=number)
                errors.append({"distribution": distribution, "m": args.m, "release": number,
                               "theta": theta, "error": error,
                               "counterfeits": result.counterfeits})
            latest = errors[-len(args.thetas):]
            print(f"release {number}: errors "
                  + ", ".join(f"{e['theta']}: {e['error']:.3f}" for e in latest), flush=True)

        run_series(table, schema, args.initial, args.r, args.m, args.seed + args.r,
                   max_releases=args.max_releases, keep=keep, label=distribution)
        pd.DataFrame(errors).to_csv(out, index=False)
    frame = pd.concat([*(pd.read_csv(p) for p in args.also), pd.DataFrame(errors)],
                      ignore_index=True)
    summary = (frame.groupby(["distribution", "m", "theta"], sort=False)["error"]
               .agg(mean_error="mean", max_error="max", releases="count").reset_index())
    plot(summary, figure)
    print()
    print(f"Date {date.today()}, {MACHINE}, total {time.perf_counter() - start:.0f} s")
    print(markdown(summary.round(4)))


if __name__ == "__main__":
    main()
