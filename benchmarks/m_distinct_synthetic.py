"""m-Distinct over a long census-like series with internal updates (Li & Zhou, §VI).

The synthetic census of :func:`republish.datasets.synthetic_census` (QIs age, gender,
education, birthplace; 50 occupations whose code order follows education, so neighbouring
codes are similar jobs), published ``--releases`` times (20 as in the paper): a first
release of 20,000 rows, then per release ``--deleted`` deletions (3,000: the paper's
setting for the counterfeit experiments, §VI-C2) and 5,000 insertions; age grows by one,
education never decreases (2% move per release), 5,000 records draw a new occupation
within their candidate set of diameter d (:mod:`republish.updates`).

Configurations follow the paper's Figs. 7-9: d in {1, 5, 10} at m = 6, and m in
{2, 4, 6, 8} at d = 5; baselines 2-diversity and 2-invariance per diameter, attacked with
the SUG attack by an adversary who knows every version's QI group.

Usage::

    python benchmarks/m_distinct_synthetic.py [--releases 20]

Writes ``benchmarks/m_distinct_synthetic_results.csv`` and
``benchmarks/figures/m_distinct_synthetic.png``; prints a Markdown summary.
"""

from __future__ import annotations

import argparse
import time
from datetime import date
from pathlib import Path

import pandas as pd
from m_distinct_common import plot, run_experiment, summarize

from republish.datasets import synthetic_census
from republish.updates import block_transitions, census_qi_updates, update_series

HERE = Path(__file__).resolve().parent
CONFIGS = [(1, 6), (5, 6), (10, 6), (5, 2), (5, 4), (5, 8)]
COMPARE_M = 6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", type=int, default=20_000)
    parser.add_argument("--deleted", type=int, default=3_000)
    parser.add_argument("--inserted", type=int, default=5_000)
    parser.add_argument("--sa-updates", type=int, default=5_000)
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--from-csv", action="store_true",
                        help="Only redraw the figure and the summary from --csv.")
    parser.add_argument("--csv", type=Path, default=HERE / "m_distinct_synthetic_results.csv")
    parser.add_argument("--figure", type=Path,
                        default=HERE / "figures" / "m_distinct_synthetic.png")
    args = parser.parse_args()
    start = time.perf_counter()
    title = (f"Synthetic census with internal updates: {args.initial:,} rows, "
             f"-{args.deleted:,} / +{args.inserted:,} per release, {args.releases} releases")
    if args.from_csv:
        results = pd.read_csv(args.csv)
        plot(results, args.figure, title, focus_d=5, compare_m=COMPARE_M)
        print(summarize(results))
        return
    size = args.initial + args.inserted * (args.releases - 1)
    table, schema = synthetic_census(size, seed=args.seed)
    order = [f"occupation-{i:02d}" for i in range(1, 51)]

    def make_series(d: int):  # type: ignore[no-untyped-def]
        model = block_transitions(order, d)
        return update_series(table, schema, model, initial=args.initial, deleted=args.deleted,
                             inserted=args.inserted, releases=args.releases,
                             sa_updates=args.sa_updates, seed=args.seed,
                             qi_updates=census_qi_updates(schema)), model

    results = run_experiment(make_series, schema, [1, 5, 10], [2, 4, 6, 8], CONFIGS,
                             args.seed, args.queries, args.time_limit)
    results.to_csv(args.csv, index=False)
    args.figure.parent.mkdir(parents=True, exist_ok=True)
    plot(results, args.figure, title, focus_d=5, compare_m=COMPARE_M)
    print()
    print(f"Date {date.today()}, total {time.perf_counter() - start:.0f} s")
    print(summarize(results))


if __name__ == "__main__":
    main()
