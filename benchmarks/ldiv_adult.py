"""Static l-diversity on Adult (l-diversity paper §6.1, Figs. 2-5 in spirit).

SA ``occupation``; QIs every subset of sizes 1..7 of the other eight columns (254 tables);
l = 2..7. Per table and l: stars, suppressed tuples and time of TP, TP+ (TP, then
Mondrian on the residue), Mondrian, and the exact tuple optimum (CP-SAT hinted with TP;
residue published as one group, like TP), plus TP's phase and lower bound.

    /tmp/venv/bin/python benchmarks/ldiv_adult.py [--max-subsets N] [--time-limit S]

Writes ``benchmarks/ldiv_adult_results.csv`` (one row per table, l and method), appending
to an existing file and skipping finished rows, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np
import pandas as pd

from republish.datasets import load_adult
from republish.generalization import Domain, group_boxes, star_count
from republish.heuristics.mondrian import mondrian
from republish.heuristics.three_phase import (
    encode_sensitive,
    qi_classes,
    residue_mask,
    three_phase,
)
from republish.heuristics.tp_plus import refine_residue
from republish.models.tuple_minimization import pair_counts, solve_tuple_minimization
from republish.tables import encode_qis

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "ldiv_adult_results.csv"
SENSITIVE = "occupation"
COLUMNS = ["sex", "age", "race", "marital-status", "education", "native-country",
           "workclass", "salary-class"]
LS = range(2, 8)


def stars_and_suppressed(codes: np.ndarray, groups: np.ndarray) -> tuple[int, int]:
    boxes = group_boxes(codes, groups)
    starred = (boxes.high > boxes.low).any(axis=1)
    return star_count(boxes), int(boxes.sizes[starred].sum())


def run_table(qis: tuple[str, ...], time_limit: float) -> list[dict[str, object]]:
    table, schema = load_adult(SENSITIVE, list(qis))
    codes = encode_qis(table, schema)
    sensitive = table[SENSITIVE].to_numpy()
    domain = Domain.of(schema, codes)
    extents = domain.high - domain.low
    value, _ = encode_sensitive(sensitive)
    classes = qi_classes(codes)
    pair_group, pair_value, pair_count, pair_of_row = pair_counts(classes, value)
    rows: list[dict[str, object]] = []
    base = {"qis": "|".join(qis), "d": len(qis), "n": len(table), "classes": int(classes.max()) + 1}
    for l in LS:  # noqa: E741
        start = time.perf_counter()
        tp = three_phase(codes, sensitive, l)
        tp_time = time.perf_counter() - start
        stars, suppressed = stars_and_suppressed(codes, tp.groups)
        common = {**base, "l": l, "phase": tp.phase, "lower_bound": tp.lower_bound,
                  "pillar_bound": tp.pillar_bound}
        rows.append({**common, "method": "TP", "stars": stars, "suppressed": suppressed,
                     "time_s": tp_time, "status": "OPTIMAL" if tp.optimal else "FEASIBLE"})

        start = time.perf_counter()
        plus_groups, _, _ = refine_residue(codes, sensitive, tp.groups, l, extents)
        plus_time = tp_time + time.perf_counter() - start
        stars, suppressed = stars_and_suppressed(codes, plus_groups)
        rows.append({**common, "method": "TP+", "stars": stars, "suppressed": suppressed,
                     "time_s": plus_time, "status": ""})

        start = time.perf_counter()
        partition = mondrian(codes, sensitive, l, extents=extents)
        mondrian_time = time.perf_counter() - start
        stars, suppressed = stars_and_suppressed(codes, partition.groups)
        rows.append({**common, "method": "Mondrian", "stars": stars, "suppressed": suppressed,
                     "time_s": mondrian_time, "status": ""})

        hint = np.bincount(pair_of_row[tp.groups < 0], minlength=len(pair_count))
        solution = solve_tuple_minimization(pair_group, pair_value, pair_count, l,
                                            hint_removed=hint, time_limit=time_limit,
                                            num_workers=2, random_seed=0)
        if solution.removed is not None:
            exact_groups = np.where(residue_mask(pair_of_row, solution.removed), -1, classes)
            stars, suppressed = stars_and_suppressed(codes, exact_groups)
        else:
            stars, suppressed = -1, -1
        rows.append({**common, "method": "exact tuples", "stars": stars,
                     "suppressed": suppressed, "time_s": solution.wall_time_s,
                     "status": solution.status, "bound": solution.bound})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-subsets", type=int, default=None,
                        help="stop after this many QI subsets (smoke runs)")
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="CP-SAT seconds per tuple minimization")
    args = parser.parse_args()
    subsets = [s for d in range(1, 8) for s in itertools.combinations(COLUMNS, d)]
    done: set[str] = set()
    if RESULTS.exists():
        done = set(pd.read_csv(RESULTS)["qis"].astype(str))
    todo = [s for s in subsets if "|".join(s) not in done][: args.max_subsets]
    start = time.perf_counter()
    for index, qis in enumerate(todo, start=1):
        frame = pd.DataFrame(run_table(qis, args.time_limit))
        frame.to_csv(RESULTS, mode="a", header=not RESULTS.exists(), index=False)
        print(f"[{index}/{len(todo)}] d={len(qis)} {'|'.join(qis)} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
