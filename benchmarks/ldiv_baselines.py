"""The l-diversity paper's baselines on Adult: Hilbert, TP+ with Hilbert (the paper's TP+)
and TDS, beside the project's Mondrian, TP and TP+ with Mondrian (§6.1 Figs. 2, 3, 6;
§6.2 Figs. 7, 8).

SA ``occupation``; QIs the first ``d`` of sex, age, race, marital-status, education,
native-country, workclass. Two sweeps: l = 2..7 at d = 4 (Figs. 2, 7) and d = 1..7 at
l = 6 (Figs. 3, 8). Per method: stars and suppressed tuples in the suppression model
(Definition 1), the KL-divergence of §6.2 (:func:`republish.kl_divergence.kl_divergence`)
of the suppression rendering (TDS: of its generalization, the interval rendering, as the
paper publishes it; the interval rendering of every method is reported too), time, and
a check of every output by :func:`republish.principles.l_diversity.check_l_diversity`.
Timing (Fig. 6) on samples of n = 5k..30k rows at d = 4, l = 6.

    nice -n 10 .venv/bin/python benchmarks/ldiv_baselines.py [--csv PATH] [--figure PATH]

Writes ``benchmarks/ldiv_baselines.csv`` and ``benchmarks/figures/ldiv_baselines.png`` (or,
when either exists -- RESULTS.md cites them -- the first free ``ldiv_baselines_2.csv`` and
``ldiv_baselines_2.png``, ... beside them; ``--csv``/``--figure`` write exactly there);
prints Markdown tables for RESULTS.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from batch_throughput import markdown  # noqa: E402  (benchmarks/ is the script's folder)
from output_paths import free_paths  # noqa: E402

from republish.datasets import load_adult  # noqa: E402
from republish.generalization import Domain, generalize, group_boxes, star_count  # noqa: E402
from republish.heuristics.hilbert import hilbert, tp_plus_hilbert  # noqa: E402
from republish.heuristics.mondrian import mondrian  # noqa: E402
from republish.heuristics.tds import tds  # noqa: E402
from republish.heuristics.three_phase import three_phase  # noqa: E402
from republish.heuristics.tp_plus import tp_plus  # noqa: E402
from republish.kl_divergence import kl_divergence  # noqa: E402
from republish.principles.l_diversity import check_l_diversity  # noqa: E402
from republish.schema import Schema  # noqa: E402
from republish.tables import encode_qis  # noqa: E402

HERE = Path(__file__).resolve().parent
COLUMNS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
Method = Callable[[np.ndarray, np.ndarray, int, Schema, np.ndarray], np.ndarray]


def _tp(codes: np.ndarray, sa: np.ndarray, l: int, schema: Schema,  # noqa: E741
        extents: np.ndarray) -> np.ndarray:
    groups = three_phase(codes, sa, l).groups.copy()
    groups[groups < 0] = groups.max() + 1  # TP publishes its residue as one group
    return groups


METHODS: dict[str, Method] = {
    "Hilbert": lambda c, s, k, sch, e: hilbert(c, s, k).groups,
    "Mondrian": lambda c, s, k, sch, e: mondrian(c, s, k, extents=e).groups,
    "TP": _tp,
    "TP+ (Mondrian)": lambda c, s, k, sch, e: tp_plus(c, s, k, extents=e).groups,
    "TP+ (Hilbert)": lambda c, s, k, sch, e: tp_plus_hilbert(c, s, k).groups,
    "TDS": lambda c, s, k, sch, e: tds(c, s, k, sch).groups,
}


def measure(table: pd.DataFrame, schema: Schema, l: int, kl: bool) -> list[dict[str, object]]:  # noqa: E741
    codes = encode_qis(table, schema)
    sa = table[schema.sensitive].to_numpy()
    domain = Domain.of(schema, codes)
    extents = domain.high - domain.low
    rows = []
    for name, method in METHODS.items():
        start = time.perf_counter()
        groups = method(codes, sa, l, schema, extents)
        seconds = time.perf_counter() - start
        boxes = group_boxes(codes, groups)
        starred = (boxes.high > boxes.low).any(axis=1)
        suppressed = generalize(table, groups, schema, "suppression")
        record: dict[str, object] = {
            "method": name, "l": l, "d": len(schema.qis), "n": len(table),
            "stars": star_count(boxes), "suppressed": int(boxes.sizes[starred].sum()),
            "groups": int(len(np.unique(groups))), "time_s": seconds,
            "verified": bool(check_l_diversity(suppressed, schema, l).ok)}
        if kl:
            interval = generalize(table, groups, schema, "interval")
            record["kl_interval"] = kl_divergence(table, interval, schema)
            record["kl"] = record["kl_interval"] if name == "TDS" else \
                kl_divergence(table, suppressed, schema)
        rows.append(record)
        print(f"d={len(schema.qis)} l={l} n={len(table)} {name}: {record['stars']} stars, "
              f"{seconds:.2f} s", flush=True)
    return rows


def figure(frame: pd.DataFrame, path: Path) -> None:
    fig, axes = plt.subplots(2, 3, figsize=(16, 8))
    l_sweep = frame[(frame["sweep"] == "l")]
    d_sweep = frame[(frame["sweep"] == "d")]
    n_sweep = frame[(frame["sweep"] == "n")]
    panels = [(axes[0][0], l_sweep, "l", "stars", "stars vs l (d = 4), Fig. 2"),
              (axes[0][1], d_sweep, "d", "stars", "stars vs d (l = 6), Fig. 3"),
              (axes[0][2], n_sweep, "n", "time_s", "time vs n (d = 4, l = 6), Fig. 6"),
              (axes[1][0], l_sweep, "l", "kl", "KL-divergence vs l (d = 4), Fig. 7"),
              (axes[1][1], d_sweep, "d", "kl", "KL-divergence vs d (l = 6), Fig. 8"),
              (axes[1][2], l_sweep, "l", "suppressed", "suppressed tuples vs l (d = 4)")]
    for axis, data, x, y, title in panels:
        for name, part in data.groupby("method", sort=False):
            axis.plot(part[x], part[y], marker="o", label=name)
        axis.set_title(title)
        axis.set_xlabel(x)
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Adult, SA occupation: l-diversity baselines")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there (default: ldiv_baselines.csv, or the first "
                        "free ldiv_baselines_<n>.csv when it exists)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/ldiv_baselines.png, or "
                        "the first free ldiv_baselines_<n>.png)")
    args = parser.parse_args()
    free_csv, free_figure = free_paths(HERE / "ldiv_baselines.csv",
                                       HERE / "figures" / "ldiv_baselines.png")
    out, figure_path = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure_path}", file=sys.stderr)
    start = time.perf_counter()
    rows = []
    for l in range(2, 8):  # noqa: E741
        table, schema = load_adult("occupation", COLUMNS[:4])
        rows += [{**r, "sweep": "l"} for r in measure(table, schema, l, kl=True)]
    for d in range(1, 8):
        table, schema = load_adult("occupation", COLUMNS[:d])
        rows += [{**r, "sweep": "d"} for r in measure(table, schema, 6, kl=True)]
    table, schema = load_adult("occupation", COLUMNS[:4])
    for n in (5_000, 10_000, 20_000, len(table)):
        sample = table.sample(n=n, random_state=0).reset_index(drop=True)
        rows += [{**r, "sweep": "n"} for r in measure(sample, schema, 6, kl=False)]
    frame = pd.DataFrame(rows)
    frame.to_csv(out, index=False)
    figure(frame, figure_path)
    for sweep, key in (("l", "l"), ("d", "d"), ("n", "n")):
        part = frame[frame["sweep"] == sweep]
        columns = [key, "method", "stars", "suppressed", "groups", "time_s", "verified"]
        if sweep != "n":
            columns[5:5] = ["kl", "kl_interval"]
        print(markdown(part[columns], digits=4))
    print(f"all verified: {bool(frame['verified'].all())}; time "
          f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
