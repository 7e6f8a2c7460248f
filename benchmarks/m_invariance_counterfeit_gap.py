"""The r = 5k counterfeit gap (issue 19, item 1; m-invariance paper §5.2, Figs. 5 and 6a).

The paper (OCC, 600k rows, T(1) = 200k, r = 5k, m = 10, 81 releases): at most 10
counterfeits per release, 51 releases without any, mean <= 2.5 (Fig. 6a). The project's
census-like table with a nearly uniform SA gave max 89, mean 17.2. This script tests the
explanation "the synthetic SA is too uniform" by rerunning the protocol on SAs with the
skew of a real occupation column (Adult's, :func:`republish.datasets.sensitive_shares`),
and compares three publishers per series:

* ``assign``  -- the paper's phases (``mode='heuristic'``, Fig. 3 Assign);
* ``reuse``   -- the same with Assign reusing existing signatures
  (:mod:`republish.heuristics.assign_reuse`, swapped in by a benchmark-only wrapper);
* ``exact``   -- ``mode='exact'`` (bucket-assignment count model + whole-release model),
  ``--time-limit`` s per release.

Usage (the RESULTS.md run is scaled down 10x: same r/T(1) ratio and number of releases)::

    nice -n 10 .venv/bin/python benchmarks/m_invariance_counterfeit_gap.py \
        --rows 60000 --initial 20000 --r 500 \
        --distributions census adult-occupation-50 adult-occupation --policies assign reuse

The 14-value Adult series with the reuse policy at the paper's size (2026-11-25; the
records now split counterfeits into balancing's and eligibility's)::

    nice -n 15 .venv/bin/python benchmarks/m_invariance_counterfeit_gap.py \
        --rows 600000 --initial 200000 --r 5000 --distributions adult-occupation \
        --policies reuse --csv benchmarks/m_invariance_counterfeit_gap_full2.csv \
        --figure benchmarks/figures/m_invariance_counterfeit_gap_full2.png

The exact pipeline at the paper's size, beside the assign/reuse series of
``m_invariance_counterfeit_gap_full.csv`` (2026-11-26; the records now carry the counts
model's certificate, ``counts_status`` = ``OPTIMAL`` when the release's counterfeits are
proven minimal for the state it inherits)::

    nice -n 15 .venv/bin/python benchmarks/m_invariance_counterfeit_gap.py \
        --rows 600000 --initial 200000 --r 5000 --distributions D --policies exact \
        --time-limit 3 --csv benchmarks/m_invariance_counterfeit_gap_exact.csv \
        --figure benchmarks/figures/m_invariance_counterfeit_gap_exact.png

(once per D in ``census adult-occupation-50``), then the three policies side by side::

    .venv/bin/python benchmarks/m_invariance_counterfeit_gap.py --plot-only \
        --rows 600000 --initial 200000 --r 5000 --distributions census adult-occupation-50 \
        --csv benchmarks/m_invariance_counterfeit_gap_exact.csv \
        --also benchmarks/m_invariance_counterfeit_gap_full.csv \
        --figure benchmarks/figures/m_invariance_counterfeit_gap_exact_vs_assign.png

Writes ``benchmarks/m_invariance_counterfeit_gap.csv`` and
``benchmarks/figures/m_invariance_counterfeit_gap.png`` (or, when either exists -- RESULTS.md
cites them -- the first free ``..._2.csv`` and ``..._2.png``, ... beside them;
``--csv``/``--figure`` write exactly there). Rows of other labels are kept from ``--csv``
(default: the committed ``m_invariance_counterfeit_gap.csv``). ``--plot-only`` reads
``--csv``; redrawing the committed CSV alone (no ``--also``) replaces its figure on purpose,
any other redraw without ``--figure`` goes to the first free ``..._<n>.png``.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from m_invariance_common import (  # noqa: E402
    MACHINE,
    counterfeit_summary,
    markdown,
    run_series,
    save_figure,
    series_table,
)
from output_paths import resolve_outputs  # noqa: E402

HERE = Path(__file__).resolve().parent
KEYS = ["distribution", "m", "r", "initial", "policy"]


def plot(results: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(results.groupby(["distribution", "m", "initial"], sort=False))
    figure, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for axis, ((distribution, m, initial), part) in zip(axes[0], panels, strict=True):
        for policy, line in part.groupby("policy", sort=False):
            axis.plot(line["release"], line["counterfeits"], marker=".", label=policy)
        axis.axhline(10, color="grey", linestyle="--", linewidth=0.8, label="paper max (10)")
        axis.set(xlabel="release", ylabel="counterfeits",
                 title=f"{distribution}, m={m}, T(1)={initial}, r={part['r'].iloc[0]}")
        axis.legend()
        axis.grid(alpha=0.3)
    save_figure(figure, path)


def plot_comparison(results: pd.DataFrame, path: Path) -> None:
    """Counterfeits per release (symlog) and cumulated, every policy in one panel per SA;
    releases whose counts model proved the counterfeits minimal are marked (``exact``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(results.groupby(["distribution", "m", "initial"], sort=False))
    figure, axes = plt.subplots(2, len(panels), figsize=(6 * len(panels), 7.5), squeeze=False)
    colours = {p: f"C{i}" for i, p in enumerate(dict.fromkeys(results["policy"]))}
    for column, ((distribution, m, initial), part) in enumerate(panels):
        top, bottom = axes[0][column], axes[1][column]
        for policy, line in part.groupby("policy", sort=False):
            line = line.sort_values("release")
            colour = colours[policy]
            proven = _proven(line)
            label = policy if not proven.any() else (
                f"{policy} ({int(proven.sum())}/{len(line)} proven minimal for the release)")
            top.plot(line["release"], line["counterfeits"], marker=".", linewidth=1,
                     label=label, color=colour)
            bottom.plot(line["release"], line["counterfeits"].cumsum(), label=label,
                        color=colour)
            by_model = line[line.get("counts_status", pd.Series("", index=line.index))
                            .fillna("").eq("OPTIMAL")]
            if len(by_model):
                top.scatter(by_model["release"], by_model["counterfeits"], marker="o",
                            facecolors="none", edgecolors=colour, s=30,
                            label=f"{policy}: proven by the counts model itself")
        top.axhline(10, color="grey", linestyle="--", linewidth=0.8, label="paper max (10)")
        top.axhline(2.5, color="grey", linestyle=":", linewidth=0.8, label="paper mean (2.5)")
        top.set_yscale("symlog", linthresh=1)
        top.set_ylim(bottom=0)
        top.set(xlabel="release", ylabel="counterfeits in the release",
                title=f"{distribution}, m={m}, T(1)={initial}, r={part['r'].iloc[0]}")
        releases = int(part["release"].max())
        bottom.plot([1, releases], [0, 2.5 * releases], color="grey", linestyle=":",
                    linewidth=0.8, label="paper: mean 2.5 per release")
        bottom.set(xlabel="release", ylabel="counterfeits, cumulated")
        for axis in (top, bottom):
            axis.legend(fontsize=7)
            axis.grid(alpha=0.3)
    save_figure(figure, path)


def _proven(frame: pd.DataFrame) -> pd.Series:
    """Releases whose counterfeits are proven minimal for the state they inherit: the
    counts model's certificate is ``OPTIMAL``, or the counterfeits meet the state's
    deficit bound (``forced``, :func:`m_invariance_common.deficit_bound`; recorded by the
    model pipelines only)."""
    status = frame.get("counts_status", pd.Series("", index=frame.index)).fillna("")
    forced = frame.get("forced", pd.Series(-1, index=frame.index)).fillna(-1)
    no_deferral = frame["deferred"].fillna(0) == 0
    return status.eq("OPTIMAL") | ((forced >= 0) & no_deferral
                                   & (frame["counterfeits"] == forced))


def proof_summary(results: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Deferrals and, for the model pipelines, the releases whose counterfeits are proven
    minimal for the release: by the counts model (``counts_proven``) and by the model or
    the deficit bound (``proven``), per ``keys``."""
    frame = results.copy()
    status = frame.get("counts_status", pd.Series("", index=frame.index)).fillna("")
    frame["by_model"] = status.eq("OPTIMAL")
    frame["proven"] = _proven(frame)
    grouped = frame.groupby(keys, sort=False)
    return pd.DataFrame({
        "deferred_total": grouped["deferred"].sum(),
        "counts_proven": grouped["by_model"].sum(),
        "proven": grouped["proven"].sum(),
        "releases": grouped["release"].count(),
    }).reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--initial", type=int, default=20_000)
    parser.add_argument("--r", type=int, default=500)
    parser.add_argument("--m", type=int, default=None,
                        help="default: 10, or 7 for adult-occupation (its largest eligible m)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--distributions", nargs="+",
                        default=["census", "adult-occupation-50", "adult-occupation"])
    parser.add_argument("--policies", nargs="+", default=["assign", "reuse"])
    parser.add_argument("--time-limit", type=float, default=3.0)
    parser.add_argument("--max-releases", type=int, default=None)
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there, read for the kept rows and by --plot-only "
                        "(default: rows kept from m_invariance_counterfeit_gap.csv, written to "
                        "the first free m_invariance_counterfeit_gap_<n>.csv when it exists)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/m_invariance_counterfeit_"
                        "gap.png, or the first free m_invariance_counterfeit_gap_<n>.png)")
    parser.add_argument("--also", type=Path, nargs="*", default=[],
                        help="CSVs of earlier runs: their series of the same --distributions, "
                             "--r and --initial are summarized and drawn beside this run's "
                             "(every policy per SA, plot_comparison), not written to --csv")
    parser.add_argument("--plot-only", action="store_true",
                        help="run nothing: summarize and draw --csv (and --also)")
    args = parser.parse_args()
    default_csv = HERE / "m_invariance_counterfeit_gap.csv"
    default_figure = HERE / "figures" / "m_invariance_counterfeit_gap.png"
    source, out, figure = resolve_outputs(args.csv, args.figure, default_csv, default_figure,
                                          plot_only=args.plot_only, also=bool(args.also))
    if out is not None:
        print(f"writing {out}", file=sys.stderr)
    print(f"figure: {figure}", file=sys.stderr)
    start = time.perf_counter()
    records: list[dict[str, object]] = []
    for distribution in [] if args.plot_only else args.distributions:
        m = args.m or (7 if distribution == "adult-occupation" else 10)
        table, schema = series_table(args.rows, args.seed, distribution)
        for policy in args.policies:
            part = run_series(table, schema, args.initial, args.r, m, args.seed + args.r,
                              policy=policy, max_releases=args.max_releases,
                              time_limit=args.time_limit, label=distribution)
            for record in part:
                record["distribution"] = distribution
                record["initial"] = args.initial
            records.extend(part)
    results = pd.DataFrame(records)
    if args.plot_only:
        results = pd.read_csv(source) if source.exists() else pd.DataFrame(columns=KEYS)
    elif source.exists():
        old = pd.read_csv(source)
        fresh = set(map(tuple, results[KEYS].drop_duplicates().to_numpy().tolist()))
        old = old[[tuple(k) not in fresh for k in old[KEYS].to_numpy().tolist()]]
        results = pd.concat([old, results], ignore_index=True)
    if out is not None:
        results.to_csv(out, index=False)
    if not args.also:
        plot(results, figure)
        print()
        print(f"Date {date.today()}, {MACHINE}, total {time.perf_counter() - start:.0f} s")
        print(markdown(counterfeit_summary(results, KEYS)))
        return
    shown = results[results["distribution"].isin(args.distributions)
                    & (results["r"] == args.r) & (results["initial"] == args.initial)]
    fresh = set(map(tuple, shown[KEYS].drop_duplicates().to_numpy().tolist()))
    for path in args.also:
        earlier = pd.read_csv(path)
        earlier = earlier[earlier["distribution"].isin(args.distributions)
                          & (earlier["r"] == args.r) & (earlier["initial"] == args.initial)
                          & pd.Series([tuple(k) not in fresh
                                       for k in earlier[KEYS].to_numpy().tolist()],
                                      index=earlier.index, dtype=bool)]
        fresh |= set(map(tuple, earlier[KEYS].drop_duplicates().to_numpy().tolist()))
        shown = pd.concat([shown, earlier], ignore_index=True)
    order = {d: i for i, d in enumerate(args.distributions)}
    shown = shown.sort_values(["distribution", "policy", "release"], kind="stable",
                              key=lambda c: c.map(order) if c.name == "distribution" else c)
    plot_comparison(shown, figure)
    summary = counterfeit_summary(shown, KEYS).merge(
        proof_summary(shown, KEYS).drop(columns="releases"), on=KEYS)
    print()
    print(f"Date {date.today()}, {MACHINE}, total {time.perf_counter() - start:.0f} s")
    print(markdown(summary))


if __name__ == "__main__":
    main()
