"""Static l-diversity: running time against n (l-diversity paper §6.1, Fig. 6 in spirit).

Synthetic census-like tables (:func:`republish.datasets.synthetic_census`: QIs age, gender,
education, birthplace, so d = 4; SA occupation with 50 values) of 100k..600k rows, l = 6.
Per n: time of TP (median of ``--repeats`` runs; the paper reports <= 1.2 s at 600k on a
3 GHz Pentium IV, the target here is <= 1 s), of TP+ and of Mondrian, and of the exact
tuple minimization (CP-SAT hinted with TP) with its status and bound. Times start from
the encoded QI codes (``encode_qis``) and the SA column, i.e. exclude loading.

    /tmp/venv/bin/python benchmarks/ldiv_scaling.py [--sizes 100000 200000 ...]

Writes ``benchmarks/ldiv_scaling_results.csv``, or, when it exists (RESULTS.md cites it;
``ldiv_figures.py`` draws it), the first free ``ldiv_scaling_results_2.csv``, ... beside it;
``--csv`` writes exactly there.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from output_paths import results_path  # benchmarks/ is the script's folder

from republish.datasets import synthetic_census
from republish.generalization import Domain
from republish.heuristics.mondrian import mondrian
from republish.heuristics.three_phase import encode_sensitive, qi_classes, three_phase
from republish.heuristics.tp_plus import refine_residue
from republish.models.tuple_minimization import pair_counts, solve_tuple_minimization
from republish.tables import encode_qis

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "ldiv_scaling_results.csv"
L = 6


def measure(n: int, repeats: int, time_limit: float) -> dict[str, object]:
    table, schema = synthetic_census(n, seed=1)
    codes = encode_qis(table, schema)
    sensitive = table[schema.sensitive].to_numpy()
    domain = Domain.of(schema, codes)
    extents = domain.high - domain.low
    tp_times = []
    for _ in range(repeats):
        start = time.perf_counter()
        tp = three_phase(codes, sensitive, L)
        tp_times.append(time.perf_counter() - start)
    start = time.perf_counter()
    refine_residue(codes, sensitive, tp.groups, L, extents)
    refine_time = time.perf_counter() - start
    start = time.perf_counter()
    mondrian(codes, sensitive, L, extents=extents)
    mondrian_time = time.perf_counter() - start
    start = time.perf_counter()
    value, _ = encode_sensitive(sensitive)
    classes = qi_classes(codes)
    pair_group, pair_value, pair_count, pair_of_row = pair_counts(classes, value)
    hint = np.bincount(pair_of_row[tp.groups < 0], minlength=len(pair_count))
    solution = solve_tuple_minimization(pair_group, pair_value, pair_count, L,
                                        hint_removed=hint, time_limit=time_limit,
                                        num_workers=2, random_seed=0)
    exact_time = time.perf_counter() - start
    return {
        "n": n, "d": 4, "l": L, "classes": int(classes.max()) + 1,
        "tp_time_s": statistics.median(tp_times), "tp_time_min_s": min(tp_times),
        "tp_phase": tp.phase, "tp_suppressed": tp.suppressed_tuples,
        "lower_bound": tp.lower_bound,
        "tp_plus_time_s": statistics.median(tp_times) + refine_time,
        "mondrian_time_s": mondrian_time,
        "exact_time_s": exact_time, "exact_solve_s": solution.wall_time_s,
        "exact_status": solution.status, "exact_suppressed": solution.objective,
        "exact_bound": solution.bound, "exact_variables": solution.variables,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[100_000, 200_000, 300_000, 400_000, 500_000, 600_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there (default: ldiv_scaling_results.csv, or the "
                        "first free ldiv_scaling_results_<n>.csv when it exists)")
    args = parser.parse_args()
    out = results_path(args.csv, RESULTS)
    print(f"writing {out}", file=sys.stderr)
    rows = []
    for n in args.sizes:
        rows.append(measure(n, args.repeats, args.time_limit))
        print(rows[-1], flush=True)
    pd.DataFrame(rows).to_csv(out, index=False)


if __name__ == "__main__":
    main()
