"""First releases of several Adult samples: how often the whole-release model proves the
release optimal within its budget, and how long it takes.

One first release (no old rows) of ``--initial`` rows per sample seed (``--samples``), at
each ``--m`` and ``--time-limit``, through the model pipeline (``--mode auto``): the
release's (b), its status, bound and gap, and the wall time of the release step. A
single series (``whole_release_adult.py``) shows one sample; the budget needed to prove
a first release varies from sample to sample. Prints Markdown for
``benchmarks/RESULTS.md``; ``--csv`` keeps one row per release.

Usage::

    python benchmarks/first_release_samples.py --m 2 --time-limit 1 2 --samples 10
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from republish.datasets import dynamic_series, load_adult
from republish.solver.m_invariance import publish_m_invariant

QIS = ["age", "sex", "education", "native-country"]


def run(initial: int, ms: list[int], limits: list[float], samples: int, mode: str
        ) -> pd.DataFrame:
    table, schema = load_adult(sensitive="occupation", qis=QIS)
    rows = []
    for seed in range(1, samples + 1):
        (microdata,) = dynamic_series(table, initial, 1, 1, seed)
        for m in ms:
            for limit in limits:
                started = time.perf_counter()
                step = publish_m_invariant(microdata, schema, m, None, mode=mode,  # type: ignore[arg-type]
                                           time_limit=limit,
                                           rng=np.random.default_rng(seed))
                wall = time.perf_counter() - started
                summary = step.summary()
                rows.append({"sample": seed, "m": m, "time_limit": limit,
                             "b": summary["cost"], "status": summary["cost_status"],
                             "bound": summary["cost_bound"], "gap": summary["cost_gap"],
                             "time_s": wall})
                print(rows[-1], file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    lines = ["| m | budget s | proven | proven within the budget | median time s | "
             "max time s | median gap of the unproven |", "|---|---|---|---|---|---|---|"]
    for (m, limit), part in frame.groupby(["m", "time_limit"]):
        proven = part["status"] == "OPTIMAL"
        within = proven & (part["time_s"] <= limit)
        unproven = part.loc[~proven, "gap"]
        gap = f"{100 * unproven.median():.1f} %" if len(unproven) else "-"
        lines.append(f"| {m} | {limit:g} | {int(proven.sum())}/{len(part)} | "
                     f"{int(within.sum())}/{len(part)} | {part['time_s'].median():.2f} | "
                     f"{part['time_s'].max():.2f} | {gap} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", type=int, default=200)
    parser.add_argument("--m", type=int, nargs="+", default=[2])
    parser.add_argument("--time-limit", type=float, nargs="+", default=[1.0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--mode", choices=["auto", "exact"], default="auto")
    parser.add_argument("--csv", type=Path, default=None)
    args = parser.parse_args()
    frame = run(args.initial, args.m, args.time_limit, args.samples, args.mode)
    if args.csv is not None:
        frame.to_csv(args.csv, index=False)
    command = "python benchmarks/first_release_samples.py " + " ".join(sys.argv[1:])
    print(f"`{command}` — {platform.machine()}, {os.cpu_count()} cores, {date.today()}\n")
    print(markdown(frame))


if __name__ == "__main__":
    main()
