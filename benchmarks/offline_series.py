"""Online chains against the offline optimum of the whole series (issue #14, item 6).

For every m: the heuristic chain and the ``auto`` chain (whole-release model per release)
publish the Adult series online; the offline model (:mod:`republish.models.offline_series`)
then minimizes the total counterfeits over all releases jointly, started from the better
chain's signatures. Prints Markdown for ``benchmarks/RESULTS.md``.

Usage::

    python benchmarks/offline_series.py --initial 200 --r 20 --releases 6 --m 2 3 4 \\
        --chain-limit 1 --offline-limit 60
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from run_line import run_line  # benchmarks/ is the script's folder

from republish.datasets import dynamic_series, load_adult
from republish.solver.m_invariance import publish_m_invariant
from republish.solver.offline_series import offline_optimum

QIS = ["age", "sex", "education", "native-country"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", type=int, default=200)
    parser.add_argument("--r", type=int, default=20)
    parser.add_argument("--releases", type=int, default=6)
    parser.add_argument("--m", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--chain-limit", type=float, default=1.0)
    parser.add_argument("--offline-limit", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    table, schema = load_adult(sensitive="occupation", qis=QIS)
    series = dynamic_series(table, args.initial, args.r, args.releases, args.seed)
    lines = ["| m | heuristic Σ cf | auto Σ cf | offline status | offline best | offline bound "
             "| offline variables | offline time s |", "|---|---|---|---|---|---|---|---|"]
    for m in args.m:
        totals, states = {}, {}
        for mode in ("heuristic", "auto"):
            state, total = None, 0
            for microdata in series:
                step = publish_m_invariant(microdata, schema, m, state, mode=mode,  # type: ignore[arg-type]
                                           time_limit=args.chain_limit,
                                           rng=np.random.default_rng(args.seed))
                state, total = step.state, total + int(step.summary()["counterfeits"])
            totals[mode], states[mode] = total, state
        better = min(totals, key=lambda mode: totals[mode])
        started = time.perf_counter()
        offline = offline_optimum(series, schema, m, time_limit=args.offline_limit,
                                  state=states[better]).solution
        elapsed = time.perf_counter() - started
        best = "-" if offline.objective is None else f"{offline.objective:g}"
        lines.append(f"| {m} | {totals['heuristic']} | {totals['auto']} | {offline.status} | "
                     f"{best} | {offline.bound:g} | {offline.variables} | {elapsed:.1f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    print(run_line())
    print("\n".join(lines))


if __name__ == "__main__":
    main()
