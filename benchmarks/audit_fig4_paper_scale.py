"""Fig. 4 of the m-invariance paper at the paper's scale (issue 19, item 5; §5.1).

``benchmarks/audit_fig4.py`` runs the experiment scaled down (T(1) = 20k). This script
uses the paper's sizes on the census-like table (:func:`republish.datasets.synthetic_census`,
600k rows, T(1) = 200k, pool 400k, r deletions + r insertions per release, H = 1 + 400k/r):
every release is published on its own as an l-diverse Mondrian table (interval model) and
the sequence is attacked with the intersection attack (Lemma 1); the same series is
published m-invariantly (``publish_m_invariant``, the paper's phases, ``mode='heuristic'``)
and attacked the same way.

Usage (the RESULTS.md run: r = 40k and 20k; r = 5k/10k mean 81/41 Mondrian releases of
200k rows per l, about an hour each on the shared machine)::

    nice -n 10 .venv/bin/python benchmarks/audit_fig4_paper_scale.py --r 40000 20000

The m-invariant series alone at r = 5k (its Mondrian rows kept; 2026-11-25 run)::

    nice -n 15 .venv/bin/python benchmarks/audit_fig4_paper_scale.py --r 5000 --m-invariance-only

Writes ``benchmarks/audit_fig4_paper_scale.csv`` and
``benchmarks/figures/audit_fig4_paper_scale.png``, or, when either exists (RESULTS.md cites
them), the first free ``..._2.csv`` and ``..._2.png``, ... beside them; ``--csv``/``--figure``
write exactly there. Rows of other r are kept from ``--csv`` (default: the committed
``audit_fig4_paper_scale.csv``).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_fig4 import audited, knowledge_of, l_diverse_series, max_l  # noqa: E402
from m_invariance_common import MACHINE, markdown, save_figure  # noqa: E402
from output_paths import free_paths  # noqa: E402

from republish.datasets import dynamic_series, synthetic_census  # noqa: E402
from republish.schema import Schema  # noqa: E402
from republish.solver.m_invariance import publish_m_invariant  # noqa: E402

HERE = Path(__file__).resolve().parent
#: The paper's Fig. 4a (OCC), read off the plot: vulnerable tuples at l = 2 and r = 5k.
PAPER_NOTE = "paper Fig. 4a: ~100k vulnerable of 600k at l = 2, decreasing with l and r"


def m_invariant_series(series: list[pd.DataFrame], schema: Schema, m: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    state = None
    releases = []
    for microdata in series:
        step = publish_m_invariant(microdata, schema, m, previous=state, rng=rng,
                                   validated=True, mode="heuristic")
        state = step.state
        releases.append(step.release)
    return releases


def plot(results: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4.5))
    for method, curve in results.groupby("method", sort=False):
        curve = curve.sort_values("r")
        style = "k--s" if str(method).startswith("m-invariance") else "-o"
        axis.plot(curve["r"], curve["vulnerable"], style, label=str(method), markersize=4)
    axis.set(xlabel="update volume r", ylabel="vulnerable tuples (Lemma 1), symlog",
             title="Fig. 4 at the paper's scale: census-like, T(1) = 200k")
    axis.set_xscale("log")
    axis.set_yscale("symlog", linthresh=1)
    axis.set_ylim(bottom=-0.2)
    axis.legend(fontsize=7)
    axis.grid(alpha=0.3)
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=600_000)
    parser.add_argument("--initial", type=int, default=200_000)
    parser.add_argument("--r", type=int, nargs="+", default=[40_000, 20_000])
    parser.add_argument("--ls", type=int, nargs="+", default=[2, 4, 6, 8, 10])
    parser.add_argument("--m", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-m-invariance", action="store_true")
    parser.add_argument("--m-invariance-only", action="store_true",
                        help="attack only the m-invariant series; keep the l-diversity rows of r")
    parser.add_argument("--csv", type=Path, default=None,
                        help="results CSV, written exactly there and read for the kept rows "
                        "(default: rows kept from audit_fig4_paper_scale.csv, written to it "
                        "or, when it exists, to the first free audit_fig4_paper_scale_<n>.csv)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/audit_fig4_paper_scale.png "
                        "or the first free ..._<n>.png)")
    args = parser.parse_args()
    start = time.perf_counter()
    default_csv = HERE / "audit_fig4_paper_scale.csv"
    free_csv, free_figure = free_paths(default_csv,
                                       HERE / "figures" / "audit_fig4_paper_scale.png")
    source = args.csv or default_csv
    out, figure = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure}", file=sys.stderr)
    table, schema = synthetic_census(args.rows, args.seed)
    kept = pd.read_csv(source) if source.is_file() else pd.DataFrame()
    if len(kept):
        drop = kept["r"].isin(args.r)
        if args.m_invariance_only:
            drop &= kept["method"].astype(str).str.startswith("m-invariance")
        kept = kept[~drop]
    rows: list[dict[str, object]] = kept.to_dict("records")
    for r in args.r:
        releases = 1 + (len(table) - args.initial) // r
        series = dynamic_series(table, args.initial, r, releases, seed=args.seed)
        knowledge = knowledge_of(table, series, schema)
        limit = min(max_l(t, schema) for t in series)
        base = {"dataset": "census", "initial": args.initial, "r": r, "releases": releases,
                "tuples": int(knowledge.presence.any(axis=1).sum())}
        for l in [] if args.m_invariance_only else args.ls:  # noqa: E741 - the principle's symbol
            if l > limit:
                continue
            rows.append(audited(base, f"l-diversity (Mondrian), l={l}", l,
                                partial(l_diverse_series, series, schema, l), knowledge))
            print(rows[-1], flush=True)
            pd.DataFrame(rows).to_csv(out, index=False)
        if not args.skip_m_invariance:
            rows.append(audited(base, f"m-invariance, m={args.m}", args.m,
                                partial(m_invariant_series, series, schema, args.m, args.seed),
                                knowledge))
            print(rows[-1], flush=True)
            pd.DataFrame(rows).to_csv(out, index=False)
    results = pd.DataFrame(rows)
    plot(results, figure)
    print()
    print(f"Date {date.today()}, {MACHINE}, total {time.perf_counter() - start:.0f} s; "
          f"{PAPER_NOTE}")
    table_view = results.pivot_table(index="r", columns="method", values="vulnerable",
                                     aggfunc="first")
    order = results.drop_duplicates("method").sort_values(
        ["method", "parameter"], key=lambda c: c.str[:1] if c.dtype == object else c)["method"]
    table_view = table_view[[m for m in order if m in table_view.columns]].reset_index()
    print(markdown(table_view))


if __name__ == "__main__":
    main()
