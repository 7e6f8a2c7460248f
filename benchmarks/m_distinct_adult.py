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
``benchmarks/figures/m_distinct_adult.png`` (or, when either exists -- RESULTS.md cites
them -- the first free ``..._2.csv`` and ``..._2.png``, ... beside them; ``--csv``/``--figure``
write exactly there); prints a Markdown summary.
"""

from __future__ import annotations

import pandas as pd
from m_distinct_common import run_benchmark, run_experiment, series_factory, series_parser

from republish.datasets import load_adult
from republish.updates import adult_occupation_order, adult_qi_updates, releases_possible

QIS = ["age", "sex", "marital-status", "education"]
COMPARE_M = 2


def main() -> None:
    parser = series_parser(__doc__.splitlines()[0], "m_distinct_adult", deleted=2_000)
    parser.add_argument("--diameters", type=int, nargs="+", default=[1, 5, 10])
    parser.add_argument("--m", type=int, nargs="+", default=[2, 4, 6, 8])
    parser.add_argument("--releases", type=int, default=None,
                        help="Releases (default: as many as the pool allows).")
    args = parser.parse_args()
    title = (f"Adult with internal updates: {args.initial:,} rows, -{args.deleted:,} / "
             f"+{args.inserted:,} per release")

    def experiment() -> pd.DataFrame:
        table, schema = load_adult(sensitive="occupation", qis=QIS)
        releases = args.releases or releases_possible(len(table), args.initial, args.inserted)
        make_series = series_factory(table, schema, adult_occupation_order(), args, releases,
                                     adult_qi_updates())
        return run_experiment(make_series, schema, args.diameters, args.m, None, args.seed,
                              args.queries, args.time_limit)

    run_benchmark(args, title, COMPARE_M, experiment)


if __name__ == "__main__":
    main()
