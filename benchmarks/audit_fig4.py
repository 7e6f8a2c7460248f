"""Failure of conventional generalization in re-publication (m-invariance paper, §5.1, Fig. 4).

Each release ``T(j)`` of a dynamic series (§5: a first random sample of ``initial`` rows,
then ``r`` deletions and ``r`` insertions from the pool per release, ``H = 1 + pool / r``
releases) is published independently as an l-diverse table (Mondrian, interval model),
then the whole sequence is audited with the intersection attack (Lemma 1): a tuple is
*vulnerable* when one sensitive value is left. The same series published m-invariantly
(``publish_m_invariant``, the step behind ``republish release``) is audited the same way.

Data: the synthetic census-like table (domains of the paper's Table 5, SA occupation)
and UCI Adult (SA occupation, the eight other columns as QIs); sizes are scaled down
from the paper's 200k + 400k rows (``--initial``/``--pool``, same r/initial ratios).

    /tmp/venv/bin/python benchmarks/audit_fig4.py [--datasets census adult]
        [--census-initial 20000] [--adult-initial 10000] [--ls 2 4 6 8 10] [--m 2]
        [--csv PATH] [--figure PATH] [--plot-only]

Writes ``benchmarks/audit_fig4_results.csv`` and ``benchmarks/figures/audit_fig4.png``, or,
when either exists (RESULTS.md cites them), the first free ``audit_fig4_results_2.csv`` and
``audit_fig4_2.png``, ... beside them; ``--csv``/``--figure`` write exactly there. Rows of
data sets not rerun are kept from ``--csv`` (default: the committed
``audit_fig4_results.csv``). ``--plot-only`` redraws the figure from ``--csv``; redrawn
from the committed CSV it replaces ``audit_fig4.png`` on purpose.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from output_paths import free_paths, redraw_path  # benchmarks/ is the script's folder

from republish.audit.intersection import intersection_attack
from republish.audit.knowledge import Knowledge, make_knowledge
from republish.datasets import dynamic_series, load_adult, synthetic_census
from republish.generalization import generalize
from republish.heuristics.mondrian import mondrian_table
from republish.release import Release
from republish.schema import Schema
from republish.solver.m_invariance import publish_m_invariant

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "audit_fig4_results.csv"
FIGURE = HERE / "figures" / "audit_fig4.png"
#: Update volumes as fractions of the first release (the paper: 5k..40k of 200k).
R_FRACTIONS = (0.025, 0.05, 0.1, 0.2)


def knowledge_of(table: pd.DataFrame, series: list[pd.DataFrame], schema: Schema) -> Knowledge:
    """``B(n)``: every row of the table with the releases containing it."""
    position = pd.Series(np.arange(len(table)), index=table[schema.identifier].to_numpy())
    presence = np.zeros((len(table), len(series)), dtype=bool)
    for j, microdata in enumerate(series):
        presence[position.loc[microdata[schema.identifier].to_numpy()].to_numpy(), j] = True
    used = presence.any(axis=1)
    return make_knowledge(table[used], presence[used], schema, with_truth=True)


def max_l(table: pd.DataFrame, schema: Schema) -> int:
    counts = table[schema.sensitive].value_counts()
    return int(len(table) // counts.iloc[0])


def l_diverse_series(
    series: list[pd.DataFrame], schema: Schema, l: int  # noqa: E741
) -> list[pd.DataFrame]:
    published = []
    for microdata in series:
        partition = mondrian_table(microdata, schema, l)
        published.append(generalize(microdata, partition.groups, schema, "interval"))
    return published


def m_invariant_series(series: list[pd.DataFrame], schema: Schema, m: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    state = None
    releases = []
    for microdata in series:
        step = publish_m_invariant(microdata, schema, m, previous=state, rng=rng)
        state = step.state
        releases.append(step.release)
    return releases


def audited(
    base: dict[str, object], method: str, parameter: int,
    publish: Callable[[], Sequence[pd.DataFrame | Release]], knowledge: Knowledge,
) -> dict[str, object]:
    """One result row: ``publish()`` the series, then the intersection attack on it, timed."""
    start = time.perf_counter()
    published = publish()
    publish_s = time.perf_counter() - start
    start = time.perf_counter()
    audit = intersection_attack(published, knowledge)
    audit_s = time.perf_counter() - start
    return {**base, "method": method, "parameter": parameter,
            "vulnerable": int(audit.vulnerable.sum()),
            "inconsistent": int(audit.inconsistent.sum()),
            "publish_s": round(publish_s, 2), "audit_s": round(audit_s, 2)}


def run_dataset(
    name: str, table: pd.DataFrame, schema: Schema, initial: int, ls: list[int], m: int,
    seed: int, skip_m: bool,
) -> list[dict[str, object]]:
    pool = len(table) - initial
    rows: list[dict[str, object]] = []
    for fraction in R_FRACTIONS:
        r = max(1, int(round(fraction * initial)))
        releases = 1 + pool // r
        series = dynamic_series(table, initial, r, releases, seed=seed)
        knowledge = knowledge_of(table, series, schema)
        limit = min(max_l(t, schema) for t in series)
        base = {"dataset": name, "initial": initial, "r": r, "releases": releases,
                "tuples": int(knowledge.presence.any(axis=1).sum())}
        for l in ls:  # noqa: E741 - the principle's symbol
            if l > limit:
                print(f"{name} r={r}: skip l={l} (a release is only {limit}-eligible)")
                continue
            rows.append(audited(base, f"l-diversity (Mondrian), l={l}", l,
                                partial(l_diverse_series, series, schema, l), knowledge))
            print(rows[-1], flush=True)
        if skip_m:
            continue
        rows.append(audited(base, f"m-invariance, m={m}", m,
                            partial(m_invariant_series, series, schema, m, seed), knowledge))
        print(rows[-1], flush=True)
    return rows


def plot(results: pd.DataFrame, path: Path = FIGURE) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(results["dataset"]))
    figure, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 5.2),
                                squeeze=False)
    for axis, name in zip(axes[0], datasets, strict=True):
        part = results[results["dataset"] == name]
        for method, curve in part.groupby("method", sort=False):
            curve = curve.sort_values("r")
            style = "k--s" if str(method).startswith("m-invariance") else "-o"
            axis.plot(curve["r"], curve["vulnerable"], style, label=str(method), markersize=4)
        first = part.iloc[0]
        axis.set_title(f"{name}: T(1) = {first['initial']} rows")
        axis.set_xlabel("update volume r (rows deleted and inserted per release)")
        axis.set_ylabel("vulnerable tuples (Lemma 1), symlog scale")
        axis.set_xscale("log")
        axis.set_yscale("symlog", linthresh=1)  # zero stays visible next to thousands
        axis.set_ylim(bottom=-0.2)
        axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
        axis.grid(alpha=0.3)
    figure.suptitle("Independent l-diverse releases vs m-invariant re-publication")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["census", "adult"])
    parser.add_argument("--census-initial", type=int, default=20_000)
    parser.add_argument("--adult-initial", type=int, default=10_000)
    parser.add_argument("--ls", type=int, nargs="+", default=[2, 4, 6, 8, 10])
    parser.add_argument("--m", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-m-invariance", action="store_true")
    parser.add_argument("--plot-only", action="store_true")
    parser.add_argument("--csv", type=Path, default=None,
                        help="results CSV, written exactly there and read for the kept rows "
                        "(default: rows kept from audit_fig4_results.csv, written to it or, "
                        "when it exists, to the first free audit_fig4_results_<n>.csv)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="figure, written exactly there (default: figures/audit_fig4.png "
                        "or the first free audit_fig4_<n>.png)")
    args = parser.parse_args()
    source = args.csv or RESULTS
    if args.plot_only:
        # Redrawing the committed CSV regenerates its cited figure on purpose.
        figure = redraw_path(args.figure, FIGURE, data=source, committed=RESULTS)
        plot(pd.read_csv(source), figure)
        print(f"figure written to {figure}", file=sys.stderr)
        return
    free_csv, free_figure = free_paths(RESULTS, FIGURE)
    out, figure = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure}", file=sys.stderr)
    # Rows of data sets not rerun now are kept from the previous results.
    kept = pd.read_csv(source) if source.is_file() else pd.DataFrame()
    if len(kept):
        kept = kept[~kept["dataset"].isin(args.datasets)]
    rows: list[dict[str, object]] = kept.to_dict("records")
    for name in args.datasets:
        if name == "census":
            # The paper's proportions: a first release of a third of the rows, the rest pool.
            table, schema = synthetic_census(3 * args.census_initial, args.seed)
            initial = args.census_initial
        else:
            table, schema = load_adult("occupation")
            initial = args.adult_initial
            size = min(len(table), 3 * initial)
            table = table.sample(n=size, random_state=args.seed).reset_index(drop=True)
        rows += run_dataset(name, table, schema, initial, args.ls, args.m, args.seed,
                            args.skip_m_invariance)
        pd.DataFrame(rows).to_csv(out, index=False)
    results = pd.DataFrame(rows)
    results.to_csv(out, index=False)
    plot(results, figure)


if __name__ == "__main__":
    main()
