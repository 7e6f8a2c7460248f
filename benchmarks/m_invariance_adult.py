"""m-invariant re-publication of UCI Adult: counterfeits, deferrals and query error per release.

Adult (ARX edition, 30,162 rows) with sensitive attribute ``occupation`` (14 values) and the
QIs closest to the m-invariance paper's (Age, Gender, Education, Birthplace): ``age``,
``sex``, ``education``, ``native-country`` (hierarchies from the shared data directory).
A first release of 20,000 rows, then ``r = 2,000`` deletions and insertions per release
until the pool is used up (:func:`republish.datasets.dynamic_series`), published for
m = 2..7 with each eligibility method (``counterfeit``, ``delete`` = deferrals,
``hybrid``). Query error: the median relative error of 1,000 random COUNT queries with
expected selectivity 10% (:func:`republish.metrics.query_error`, the paper's §5.2),
answered from ``T*(n)`` and ``R(n)`` against the microdata ``T(n)``.

Usage::

    python benchmarks/m_invariance_adult.py

Writes ``benchmarks/m_invariance_adult_results.csv`` and
``benchmarks/figures/m_invariance_adult.png`` (or, when either exists -- RESULTS.md cites
them -- the first free ``..._2.csv`` and ``..._2.png``, ... beside them; ``--csv``/``--figure``
write exactly there); prints a Markdown summary. Needs the shared data directory
(``$REPUBLISH_DATASETS`` or ``../shared/datasets``).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
from output_paths import free_paths  # benchmarks/ is the script's folder

from republish.datasets import dynamic_series, load_adult
from republish.metrics import query_error
from republish.solver.m_invariance import publish_m_invariant
from republish.state import PublisherState

HERE = Path(__file__).resolve().parent
QIS = ["age", "sex", "education", "native-country"]
METHODS = ("counterfeit", "delete", "hybrid")


def run(initial: int, r: int, ms: list[int], seed: int, queries: int) -> pd.DataFrame:
    table, schema = load_adult(sensitive="occupation", qis=QIS)
    releases = 1 + (len(table) - initial) // r
    series = dynamic_series(table, initial, r, releases, seed=seed)
    records = []
    for method in METHODS:
        for m in ms:
            state: PublisherState | None = None
            rng = np.random.default_rng(seed)
            for number, microdata in enumerate(series, start=1):
                result = publish_m_invariant(microdata, schema, m, state,
                                             eligibility=method,  # type: ignore[arg-type]
                                             rng=rng, validated=True)
                state = result.state
                release = result.release
                error = query_error(microdata, release.published, release.counterfeits, schema,
                                    count=queries, seed=number)
                records.append({
                    "method": method, "m": m, "release": number, "rows": result.rows,
                    "new": result.new, "counterfeits": result.counterfeits,
                    "deferred": result.deferred, "groups": result.groups,
                    "query_error": error, "mean_perimeter": result.mean_perimeter,
                    "wall_time_s": result.wall_time_s,
                })
                print(f"{method} m={m} release {number}: {result.counterfeits} counterfeits, "
                      f"{result.deferred} deferred, error {error:.3f}", flush=True)
    return pd.DataFrame(records)


def summarize(results: pd.DataFrame) -> str:
    lines = [
        "| method | m | releases | counterfeits (total / max) | deferrals (total / max) | "
        "median query error | mean wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for (method, m), part in results.groupby(["method", "m"], sort=False):
        lines.append(
            f"| {method} | {m} | {len(part)} | {int(part['counterfeits'].sum())} / "
            f"{int(part['counterfeits'].max())} | {int(part['deferred'].sum())} / "
            f"{int(part['deferred'].max())} | {part['query_error'].median():.3f} | "
            f"{part['wall_time_s'].mean():.2f} |"
        )
    return "\n".join(lines)


def plot(results: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = [("counterfeits", "counterfeits"), ("deferred", "deferrals"),
               ("query_error", "query error (median relative)")]
    figure, axes = plt.subplots(len(METHODS), len(columns), figsize=(13, 9), sharex=True)
    for row, method in enumerate(METHODS):
        part = results[results["method"] == method]
        for col, (key, label) in enumerate(columns):
            axis = axes[row][col]
            for m, series in part.groupby("m"):
                axis.plot(series["release"], series[key], marker=".", label=f"m = {m}")
            axis.set(title=f"{method}: {label}", xlabel="release")
            axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.suptitle("Adult (SA occupation), first release 20,000 rows, r = 2,000")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", type=int, default=20_000)
    parser.add_argument("--r", type=int, default=2_000)
    parser.add_argument("--m", type=int, nargs="+", default=[2, 3, 4, 5, 6, 7])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there (default: m_invariance_adult_results.csv, "
                        "or the first free m_invariance_adult_results_<n>.csv)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/m_invariance_adult.png, "
                        "or the first free m_invariance_adult_<n>.png)")
    args = parser.parse_args()
    free_csv, free_figure = free_paths(HERE / "m_invariance_adult_results.csv",
                                       HERE / "figures" / "m_invariance_adult.png")
    out, figure = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure}", file=sys.stderr)
    start = time.perf_counter()
    results = run(args.initial, args.r, args.m, args.seed, args.queries)
    results.to_csv(out, index=False)
    plot(results, figure)
    print()
    print(f"Date {date.today()}, total {time.perf_counter() - start:.0f} s")
    print(summarize(results))


if __name__ == "__main__":
    main()
