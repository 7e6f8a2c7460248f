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
``benchmarks/figures/m_distinct_synthetic.png`` (or, when either exists -- RESULTS.md cites
them -- the first free ``..._2.csv`` and ``..._2.png``, ... beside them; ``--csv``/``--figure``
write exactly there); prints a Markdown summary.
"""

from __future__ import annotations

import pandas as pd
from m_distinct_common import run_benchmark, run_experiment, series_factory, series_parser

from republish.datasets import synthetic_census
from republish.updates import census_qi_updates

CONFIGS = [(1, 6), (5, 6), (10, 6), (5, 2), (5, 4), (5, 8)]
COMPARE_M = 6


def main() -> None:
    parser = series_parser(__doc__.splitlines()[0], "m_distinct_synthetic", deleted=3_000)
    parser.add_argument("--releases", type=int, default=20)
    args = parser.parse_args()
    title = (f"Synthetic census with internal updates: {args.initial:,} rows, "
             f"-{args.deleted:,} / +{args.inserted:,} per release, {args.releases} releases")

    def experiment() -> pd.DataFrame:
        size = args.initial + args.inserted * (args.releases - 1)
        table, schema = synthetic_census(size, seed=args.seed)
        order = [f"occupation-{i:02d}" for i in range(1, 51)]
        make_series = series_factory(table, schema, order, args, args.releases,
                                     census_qi_updates(schema))
        return run_experiment(make_series, schema, [1, 5, 10], [2, 4, 6, 8], CONFIGS,
                              args.seed, args.queries, args.time_limit)

    run_benchmark(args, title, COMPARE_M, experiment)


if __name__ == "__main__":
    main()
