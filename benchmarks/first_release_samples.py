"""First releases of several Adult samples: how often the whole-release model proves the
release optimal within its budget, and how long it takes.

One first release (no old rows) of ``--initial`` rows per sample seed (``--samples``), at
each ``--m`` and ``--time-limit``, through the model pipeline (``--mode auto``): the
release's (b), its status, bound and gap, and the wall time of the release step. A
single series (``whole_release_adult.py``) shows one sample; the budget needed to prove
a first release varies from sample to sample. Prints Markdown for
``benchmarks/RESULTS.md``; ``--csv`` keeps one row per release.

By default the releases run one after the other in this process. ``--cold`` runs each
in a new Python process, as ``republish release`` does: its first model then builds its
tables on memory the process has never used, which took up to twice as long (the wall
time still counts the release step only, not the interpreter's start).

Usage::

    python benchmarks/first_release_samples.py --m 2 --time-limit 1 2 --samples 10
    python benchmarks/first_release_samples.py --m 2 --time-limit 1 --samples 10 --cold
    python benchmarks/first_release_samples.py --m 4 --time-limit 2 3 --samples 10 --workers 2
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from run_line import run_line  # benchmarks/ is the script's folder

from republish.datasets import dynamic_series, load_adult
from republish.schema import Schema
from republish.solver.m_invariance import publish_m_invariant
from republish.solver.options import FIRST_RELEASES

QIS = ["age", "sex", "education", "native-country"]


def sample_of(initial: int, seed: int, table: pd.DataFrame) -> pd.DataFrame:
    """Sample ``seed``: the first table of a one-release series of ``initial`` rows."""
    (microdata,) = dynamic_series(table, initial, 1, 1, seed)
    return microdata


def release(microdata: pd.DataFrame, schema: Schema, seed: int, m: int, limit: float,
            mode: str, workers: int = 1, policy: str = "buckets") -> dict[str, object]:
    """The first release of sample ``seed`` under first-release ``policy``: its (b),
    status, bound, gap, what was proven within the policy, and wall time."""
    started = time.perf_counter()
    step = publish_m_invariant(microdata, schema, m, None, mode=mode,  # type: ignore[arg-type]
                               time_limit=limit, rng=np.random.default_rng(seed),
                               workers=workers, first_release=policy)
    wall = time.perf_counter() - started
    summary = step.summary()
    return {"sample": seed, "m": m, "time_limit": limit, "policy": policy,
            "b": summary["cost"], "status": summary["cost_status"],
            "bound": summary["cost_bound"], "gap": summary["cost_gap"],
            "within": summary.get("within"), "within_bound": summary.get("within_bound"),
            "within_gap": summary.get("within_gap"), "time_s": wall}


def run(initial: int, ms: list[int], limits: list[float], samples: int, mode: str,
        cold: bool = False, workers: int = 1, policies: tuple[str, ...] = ("buckets",)
        ) -> pd.DataFrame:
    rows = []
    # Adult and each sample read once, for every m and budget (a --cold child reads its own)
    table, schema = load_adult(sensitive="occupation", qis=QIS)
    for seed in range(1, samples + 1):
        microdata = sample_of(initial, seed, table)
        for m, limit, policy in itertools.product(ms, limits, policies):
            if cold:  # a new interpreter per release, as the command line runs one
                done = subprocess.run(
                    [sys.executable, __file__, "--one", str(initial), str(seed), str(m),
                     str(limit), mode, str(workers), policy],
                    check=True, capture_output=True, text=True)
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            else:
                rows.append(release(microdata, schema, seed, m, limit, mode, workers,
                                    policy))
            print(rows[-1], file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    lines = ["| policy | m | budget s | proven | proven within the budget | median time s | "
             "max time s | median gap of the unproven | Σ (b) | median gap within the "
             "policy |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (policy, m, limit), part in frame.groupby(["policy", "m", "time_limit"], sort=False):
        proven = part["status"] == "OPTIMAL"
        within = proven & (part["time_s"] <= limit)
        unproven = part.loc[~proven, "gap"]
        gap = f"{100 * unproven.median():.1f} %" if len(unproven) else "-"
        inside = part["within_gap"].dropna()
        inside_gap = f"{100 * inside.median():.1f} %" if len(inside) else "-"
        lines.append(f"| {policy} | {m} | {limit:g} | {int(proven.sum())}/{len(part)} | "
                     f"{int(within.sum())}/{len(part)} | {part['time_s'].median():.2f} | "
                     f"{part['time_s'].max():.2f} | {gap} | {part['b'].sum():,.1f} | "
                     f"{inside_gap} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", type=int, default=200)
    parser.add_argument("--m", type=int, nargs="+", default=[2])
    parser.add_argument("--time-limit", type=float, nargs="+", default=[1.0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--mode", choices=["auto", "exact"], default="auto")
    parser.add_argument("--csv", type=Path, default=None)
    parser.add_argument("--cold", action="store_true",
                        help="run each release in a new Python process")
    parser.add_argument("--workers", type=int, default=1,
                        help="cores a release step may use (from 2, a first release "
                             "whose m-row relaxation would not get its time in the "
                             "process runs it in a second process)")
    parser.add_argument("--first-release", nargs="+", default=["buckets"],
                        choices=list(FIRST_RELEASES),
                        help="first-release policies, each run on every sample")
    parser.add_argument("--one", nargs=7, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:  # a --cold child: one release, its row as JSON
        initial, seed, m, limit, mode, workers, policy = args.one
        table, schema = load_adult(sensitive="occupation", qis=QIS)
        print(json.dumps(release(sample_of(int(initial), int(seed), table), schema,
                                 int(seed), int(m), float(limit), mode, int(workers),
                                 policy)))
        return
    frame = run(args.initial, args.m, args.time_limit, args.samples, args.mode, args.cold,
                args.workers, tuple(args.first_release))
    if args.csv is not None:
        frame.to_csv(args.csv, index=False)
    print(run_line())
    print(markdown(frame))


if __name__ == "__main__":
    main()
