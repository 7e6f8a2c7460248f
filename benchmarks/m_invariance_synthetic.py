"""m-invariant re-publication on a census-like series (m-invariance paper, §5.2, Figs. 5, 6, 9).

A synthetic table of 600k rows with the domains of the paper's Table 5
(:func:`republish.datasets.synthetic_census`), a first release of 200k rows and ``r``
deletions plus ``r`` insertions per release (:func:`republish.datasets.dynamic_series`),
published with :func:`republish.solver.m_invariance.publish_m_invariant` (m = 10,
counterfeits for eligibility). For every release it records the counterfeits, the groups,
and the wall time of the step, split into computing (division .. build) and verifying
(the verifier run before a release is returned).

Usage::

    python benchmarks/m_invariance_synthetic.py                 # r = 5k, 10k, 20k, 40k
    python benchmarks/m_invariance_synthetic.py --r 40000 --max-releases 6

Writes ``benchmarks/m_invariance_synthetic_results.csv`` and
``benchmarks/figures/m_invariance_synthetic_counterfeits.png`` (or, when either exists --
RESULTS.md cites them -- the first free ``..._2.csv`` and ``..._2.png``, ... beside them;
``--csv``/``--figure`` write exactly there) and prints a Markdown summary (pasted into
``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
from output_paths import free_paths  # benchmarks/ is the script's folder

from republish.datasets import dynamic_series, synthetic_census
from republish.solver.m_invariance import publish_m_invariant
from republish.state import PublisherState

HERE = Path(__file__).resolve().parent


def run_series(
    table: pd.DataFrame, schema: object, initial: int, r: int, m: int, seed: int,
    max_releases: int | None,
) -> list[dict[str, object]]:
    releases = 1 + (len(table) - initial) // r
    if max_releases is not None:
        releases = min(releases, max_releases)
    series = dynamic_series(table, initial, r, releases, seed=seed)
    state: PublisherState | None = None
    rng = np.random.default_rng(seed)
    records = []
    for number, microdata in enumerate(series, start=1):
        # CPU time per phase (the progress callback marks each phase's start): on a
        # shared machine wall time is inflated by other jobs, the process's CPU time is not.
        marks: list[tuple[str, float]] = [("start", time.process_time())]
        result = publish_m_invariant(
            microdata, schema, m, state, rng=rng, validated=True,  # type: ignore[arg-type]
            progress=lambda phase, marks=marks: marks.append((phase, time.process_time())),
        )
        marks.append(("end", time.process_time()))
        at = dict(marks)
        cpu = at["end"] - at["start"]
        state = result.state
        times = result.certificate.times
        verify = times.get("verify", 0.0)
        records.append({
            "r": r, "release": number, "rows": result.rows, "new": result.new,
            "deleted": result.deleted, "counterfeits": result.counterfeits,
            "groups": result.groups, "mean_perimeter": result.mean_perimeter,
            "wall_time_s": result.wall_time_s, "compute_s": result.wall_time_s - verify,
            "verify_s": verify, "split_s": times.get("split", 0.0), "cpu_s": cpu,
            "cpu_compute_s": at["verify"] - at["start"], "cpu_verify_s": at["state"] - at["verify"],
            "load_average": os.getloadavg()[0],
        })
        print(f"r={r} release {number}/{len(series)}: {result.counterfeits} counterfeits, "
              f"{result.wall_time_s:.2f} s (verify {verify:.2f} s)", flush=True)
        series[number - 1] = microdata.iloc[:0]  # free the table
    del series
    gc.collect()
    return records


def summarize(results: pd.DataFrame) -> str:
    lines = [
        "| r | releases | median wall s (compute + verify) | median CPU s compute | median CPU s "
        "verify | max counterfeits | mean counterfeits | releases without counterfeits |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r, part in results.groupby("r"):
        later = part[part["release"] > 1]  # release 1 has no previous release
        lines.append(
            f"| {r} | {len(part)} | {later['wall_time_s'].median():.2f} "
            f"({later['compute_s'].median():.2f} + {later['verify_s'].median():.2f}) | "
            f"{later['cpu_compute_s'].median():.2f} | {later['cpu_verify_s'].median():.2f} | "
            f"{int(part['counterfeits'].max())} | {part['counterfeits'].mean():.2f} | "
            f"{int((part['counterfeits'] == 0).sum())} |"
        )
    first = results[results["release"] == 1].iloc[0]
    lines.append("")
    lines.append(f"Mean 1-minute load average during the runs: "
                 f"{results['load_average'].mean():.1f} (2 cores).")
    lines.append(
        f"First release (200k rows, no previous release): wall {first['wall_time_s']:.2f} s "
        f"(compute {first['compute_s']:.2f} s, verify {first['verify_s']:.2f} s); CPU compute "
        f"{first['cpu_compute_s']:.2f} s, verify {first['cpu_verify_s']:.2f} s."
    )
    return "\n".join(lines)


def plot(results: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    for r, part in results.groupby("r"):
        axes[0].plot(part["release"], part["counterfeits"], marker=".", label=f"r = {r}")
        axes[1].plot(part["release"], part["compute_s"], marker=".", label=f"r = {r}")
    axes[0].set(xlabel="release", ylabel="counterfeits", title="Counterfeits per release (m = 10)")
    axes[1].set(xlabel="release", ylabel="seconds",
                title="Compute time per release (verification excluded)")
    for axis in axes:
        axis.legend()
        axis.grid(alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=600_000)
    parser.add_argument("--initial", type=int, default=200_000)
    parser.add_argument("--r", type=int, nargs="+", default=[5_000, 10_000, 20_000, 40_000])
    parser.add_argument("--m", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-releases", type=int, default=None)
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there (default: m_invariance_synthetic_results.csv, "
                        "or the first free m_invariance_synthetic_results_<n>.csv)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/"
                        "m_invariance_synthetic_counterfeits.png, or the first free "
                        "m_invariance_synthetic_counterfeits_<n>.png)")
    args = parser.parse_args()
    free_csv, free_figure = free_paths(HERE / "m_invariance_synthetic_results.csv",
                                       HERE / "figures" / "m_invariance_synthetic_counterfeits.png")
    out, figure = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure}", file=sys.stderr)
    start = time.perf_counter()
    table, schema = synthetic_census(args.rows, seed=args.seed)
    records: list[dict[str, object]] = []
    for r in args.r:
        records.extend(run_series(table, schema, args.initial, r, args.m, args.seed + r,
                                  args.max_releases))
        pd.DataFrame(records).to_csv(out, index=False)
    results = pd.DataFrame(records)
    plot(results, figure)
    print()
    print(f"Date {date.today()}, {platform.processor() or platform.machine()}, "
          f"total {time.perf_counter() - start:.0f} s")
    print(summarize(results))


if __name__ == "__main__":
    main()
