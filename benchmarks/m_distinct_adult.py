"""m-Distinct on UCI Adult with internal updates (Li & Zhou, §VI-A protocol).

Adult (ARX edition, 30,162 rows), QIs ``age``, ``sex``, ``marital-status``, ``education``
(the paper's Age, Gender, Marital status, Education), sensitive ``occupation`` (14 values
in the leaf order of its hierarchy, so similar jobs are adjacent). A first release of
20,000 rows, then 2,000 deletions and 5,000 insertions per release while the pool lasts
(3 releases); between releases age grows by one, marital status and education move along
their semantic order (2% of the records each), and 5,000 records draw a new occupation
within their candidate set of diameter d (:mod:`republish.updates`).

Compared: m-Distinct for m in {2, 4, 6, 8}; 2-diversity (Mondrian, each release alone);
2-invariance publishing changed records under new identifiers. Attack: the SUG attack by
an adversary who knows every version's QI group (versions with risk 1, Lemma 2).

Usage::

    python benchmarks/m_distinct_adult.py [--diameters 1 5 10] [--m 2 4 6 8]

Writes ``benchmarks/m_distinct_adult_results.csv`` and
``benchmarks/figures/m_distinct_adult.png``; prints a Markdown summary.
"""

from __future__ import annotations

import argparse
import time
from datetime import date
from pathlib import Path

import pandas as pd
from m_distinct_common import plot, run_experiment, summarize

from republish.datasets import load_adult
from republish.updates import (
    adult_occupation_order,
    adult_qi_updates,
    block_transitions,
    releases_possible,
    update_series,
)

HERE = Path(__file__).resolve().parent
QIS = ["age", "sex", "marital-status", "education"]
COMPARE_M = 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", type=int, default=20_000)
    parser.add_argument("--deleted", type=int, default=2_000)
    parser.add_argument("--inserted", type=int, default=5_000)
    parser.add_argument("--sa-updates", type=int, default=5_000)
    parser.add_argument("--diameters", type=int, nargs="+", default=[1, 5, 10])
    parser.add_argument("--m", type=int, nargs="+", default=[2, 4, 6, 8])
    parser.add_argument("--releases", type=int, default=None,
                        help="Releases (default: as many as the pool allows).")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--from-csv", action="store_true",
                        help="Only redraw the figure and the summary from --csv.")
    parser.add_argument("--csv", type=Path, default=HERE / "m_distinct_adult_results.csv")
    parser.add_argument("--figure", type=Path,
                        default=HERE / "figures" / "m_distinct_adult.png")
    args = parser.parse_args()
    start = time.perf_counter()
    title = (f"Adult with internal updates: {args.initial:,} rows, -{args.deleted:,} / "
             f"+{args.inserted:,} per release")
    if args.from_csv:
        results = pd.read_csv(args.csv)
        plot(results, args.figure, title, focus_d=5, compare_m=COMPARE_M)
        print(summarize(results))
        return
    table, schema = load_adult(sensitive="occupation", qis=QIS)
    order = adult_occupation_order()
    releases = args.releases or releases_possible(len(table), args.initial, args.inserted)

    def make_series(d: int):  # type: ignore[no-untyped-def]
        model = block_transitions(order, d)
        return update_series(table, schema, model, initial=args.initial, deleted=args.deleted,
                             inserted=args.inserted, releases=releases,
                             sa_updates=args.sa_updates, seed=args.seed,
                             qi_updates=adult_qi_updates()), model

    results = run_experiment(make_series, schema, args.diameters, args.m, None, args.seed,
                             args.queries, args.time_limit)
    results.to_csv(args.csv, index=False)
    args.figure.parent.mkdir(parents=True, exist_ok=True)
    plot(results, args.figure, title, focus_d=5, compare_m=COMPARE_M)
    print()
    print(f"Date {date.today()}, total {time.perf_counter() - start:.0f} s")
    print(summarize(results))


if __name__ == "__main__":
    main()
