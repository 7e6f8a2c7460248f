"""m-Distinct with the identity relation against the m-invariance path (same series).

With no value allowed to change, m-Distinct is m-invariance (Li & Zhou, §III-C). This runs
both release steps on one census series (:func:`republish.datasets.dynamic_series`) and
prints counterfeits and mean normalized perimeter per release.

Usage::

    python benchmarks/m_distinct_identity.py [--rows 3000] [--r 600] [--releases 5]
"""

from __future__ import annotations

import argparse

import numpy as np

from republish.datasets import dynamic_series, synthetic_census
from republish.solver.m_distinct import publish_m_distinct
from republish.solver.m_invariance import publish_m_invariant
from republish.transitions import TransitionModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000)
    parser.add_argument("--r", type=int, default=600)
    parser.add_argument("--releases", type=int, default=5)
    parser.add_argument("--m", type=int, nargs="+", default=[4, 8])
    args = parser.parse_args()
    table, schema = synthetic_census(2 * args.rows, seed=4)
    series = dynamic_series(table, args.rows, args.r, args.releases, seed=2)
    model = TransitionModel.identity([f"occupation-{i:02d}" for i in range(1, 51)])
    print("| m | release | m-invariance counterfeits | m-Distinct counterfeits | "
          "m-invariance perimeter | m-Distinct perimeter | m-Distinct status |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for m in args.m:
        invariant = distinct = None
        for number, microdata in enumerate(series, start=1):
            a = publish_m_invariant(microdata, schema, m, invariant,
                                    rng=np.random.default_rng(0))
            b = publish_m_distinct(microdata, schema, m, model, distinct,
                                   rng=np.random.default_rng(0), time_limit=5)
            invariant, distinct = a.state, b.state
            print(f"| {m} | {number} | {a.counterfeits} | {b.counterfeits} | "
                  f"{a.mean_perimeter:.3f} | {b.mean_perimeter:.3f} | "
                  f"{b.certificate.status} |", flush=True)


if __name__ == "__main__":
    main()
