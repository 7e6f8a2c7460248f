"""Modifications needed for m-eligibility on UCI Adult (m-eligibility paper, Figs. 2 and 5).

For every categorical column of ``adult.csv`` as the sensitive attribute and every m from 2
to its number of values, compute the number of modifications of

* counterfeits only (Algorithm 1 / the model in ``counterfeit`` mode),
* deletions only (Algorithm 2 / ``delete`` mode),
* hybrid, exact (CP-SAT, ``hybrid`` mode) and greedy (Algorithm 3),
* the random-counterfeit baseline of §IV-B (mean over 5 seeds; runs that reach the cap
  of ``100 * max(c*m - n, m)`` counterfeits without becoming eligible are counted apart),

and the wall and CPU time of every exact solve (median of ``--repeats`` runs), without and
with the heuristic's hint (as :func:`republish.solver.eligibility.make_eligible` runs it).

Usage::

    python benchmarks/eligibility_adult.py [--data ../shared/datasets/adult/adult.csv]
        [--figure benchmarks/figures/eligibility_adult.png] [--csv results.csv]
        [--repeats 3] [--from-csv results.csv]

Prints a Markdown summary on stdout (pasted into ``benchmarks/RESULTS.md``). The figure goes
to ``--figure`` exactly, by default to ``benchmarks/figures/eligibility_adult.png`` or, when
that exists (RESULTS.md cites it), the first free ``eligibility_adult_2.png``, ... beside it
(also with ``--from-csv``: no CSV of the cited figure is committed). ``--csv`` is written
exactly where given.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from output_paths import results_path  # noqa: E402  (benchmarks/ is the script's folder)

from republish.heuristics.eligibility import (  # noqa: E402
    greedy_hybrid,
    maximal_subset,
    minimal_superset,
    random_counterfeits,
)
from republish.models.eligibility import solve_eligibility  # noqa: E402
from republish.problems.eligibility import EligibilitySolution  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SEEDS = range(5)


def default_data() -> Path:
    configured = os.environ.get("REPUBLISH_DATASETS")
    base = Path(configured) if configured else ROOT.parent / "shared" / "datasets"
    return base / "adult" / "adult.csv"


def read_adult(path: Path) -> pd.DataFrame:
    """The ARX edition of Adult: ``;``-separated, CRLF, one header row, no missing values."""
    frame = pd.read_csv(path, sep=";", dtype=str, keep_default_na=False)
    frame.columns = [column.strip() for column in frame.columns]
    return frame.apply(lambda column: column.str.strip())


def timed(run: Callable[[], EligibilitySolution], repeats: int) -> tuple[EligibilitySolution,
                                                                         float, float]:
    """The solution and the median wall and CPU milliseconds of ``repeats`` runs."""
    walls, cpus = [], []
    solution = None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        solution = run()
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    assert solution is not None
    return solution, statistics.median(walls), statistics.median(cpus)


def measure(column: str, counts: dict[str, int], m: int, repeats: int) -> dict[str, object]:
    row: dict[str, object] = {"column": column, "values": len(counts), "m": m,
                              "rows": sum(counts.values())}
    heuristics = {
        "counterfeit": minimal_superset(counts, m),
        "delete": maximal_subset(counts, m),
        "hybrid": greedy_hybrid(counts, m),
    }
    row["greedy_hybrid"] = heuristics["hybrid"].objective
    row["greedy_time_ms"] = heuristics["hybrid"].solve_time_s * 1000
    for mode, heuristic in heuristics.items():
        def plain(mode: str = mode) -> EligibilitySolution:
            return solve_eligibility(counts, m, mode, num_workers=1)  # type: ignore[arg-type]

        def hinted(mode: str = mode, hint: EligibilitySolution = heuristic) -> EligibilitySolution:
            return solve_eligibility(counts, m, mode, num_workers=1,  # type: ignore[arg-type]
                                     hint=hint)

        exact, wall, cpu = timed(plain, repeats)
        with_hint, hint_wall, hint_cpu = timed(hinted, repeats)
        assert exact.status == with_hint.status == "OPTIMAL", (column, m, mode, exact.status)
        assert exact.objective == with_hint.objective
        row[mode] = exact.objective
        row[f"{mode}_ms"], row[f"{mode}_cpu_ms"] = wall, cpu
        row[f"{mode}_hint_ms"], row[f"{mode}_hint_cpu_ms"] = hint_wall, hint_cpu
    assert heuristics["counterfeit"].objective == row["counterfeit"]  # Proposition 3
    assert heuristics["delete"].objective == row["delete"]  # Proposition 6
    runs = [random_counterfeits(counts, m, seed) for seed in SEEDS]
    finished = [run.objective for run in runs if run.status == "HEURISTIC"]
    row["random_mean"] = statistics.mean(finished) if finished else float("nan")
    row["random_capped"] = len(runs) - len(finished)
    return row


def plot(results: pd.DataFrame, path: Path, rows: int) -> None:
    figure, axes = plt.subplots(2, 2, figsize=(12, 9), sharex=True)
    panels = [
        (axes[0, 0], "counterfeit", "(a) counterfeits (Algorithm 1 = exact)"),
        (axes[0, 1], "delete", "(b) deletions (Algorithm 2 = exact)"),
        (axes[1, 0], "hybrid", "(c) hybrid, exact (CP-SAT)"),
    ]
    for axis, key, title in panels:
        for column, part in results.groupby("column", sort=False):
            ratio = part["m"] / part["values"]
            line = axis.plot(ratio, part[key], marker="o", markersize=3, label=column)[0]
            if key == "hybrid":
                worse = part[part["greedy_hybrid"] > part["hybrid"]]
                axis.plot(worse["m"] / worse["values"], worse["hybrid"], "o", markersize=9,
                          markerfacecolor="none", color=line.get_color())
        axis.axhline(rows / 2, linestyle="--", color="grey", linewidth=1)
        axis.set_title(title)
        axis.set_ylabel("modifications")
        axis.set_yscale("symlog", linthresh=100)
        axis.set_ylim(bottom=0)
    worse = results[results["greedy_hybrid"] > results["hybrid"]]
    note = "\n".join(f"{r.column} m={r.m}: {int(r.greedy_hybrid)} vs {int(r.hybrid)}"
                     for r in worse.itertuples())
    axes[1, 0].text(0.98, 0.03, "Algorithm 3 above the optimum (circled):\n" + (note or "none"),
                    transform=axes[1, 0].transAxes, ha="right", va="bottom", fontsize=8,
                    bbox={"facecolor": "white", "edgecolor": "grey"})
    axis = axes[1, 1]
    for column, part in results.groupby("column", sort=False):
        finished = part[part["random_capped"] == 0]
        ratio = finished["m"] / finished["values"]
        line = axis.plot(ratio, finished["random_mean"], linestyle="--", marker="^",
                         markersize=3)[0]
        axis.plot(ratio, finished["counterfeit"], color=line.get_color(), marker="o",
                  markersize=3, label=column)
    axis.axhline(rows / 2, linestyle="--", color="grey", linewidth=1)
    axis.set_title("(d) counterfeits: optimal (solid), random baseline (dashed)")
    axis.set_yscale("symlog", linthresh=100)
    axis.set_ylim(bottom=0)
    for axis in axes[1]:
        axis.set_xlabel("m / l (l = distinct sensitive values)")
    axes[0, 0].legend(fontsize=8)
    figure.suptitle(f"m-eligibility on Adult ({rows} rows); dashed grey line: half the rows")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)


def summary(results: pd.DataFrame) -> str:
    lines = ["| SA column | l | m range | max counterfeits | max deletions | max hybrid | "
             "Alg. 3 > exact at m | random / optimal (mean) | capped random runs |",
             "|---|---:|---|---:|---:|---:|---|---:|---:|"]
    for column, part in results.groupby("column", sort=False):
        worse = part[part["greedy_hybrid"] > part["hybrid"]]
        gaps = ", ".join(f"{int(r.m)} (+{int(r.greedy_hybrid - r.hybrid)})"
                         for r in worse.itertuples()) or "none"
        positive = part[(part["counterfeit"] > 0) & (part["random_capped"] == 0)]
        ratio = (positive["random_mean"] / positive["counterfeit"]).mean()
        lines.append(
            f"| {column} | {int(part['values'].iloc[0])} | 2..{int(part['m'].max())} | "
            f"{int(part['counterfeit'].max())} | {int(part['delete'].max())} | "
            f"{int(part['hybrid'].max())} | {gaps} | "
            f"{'-' if pd.isna(ratio) else f'{ratio:.1f}x'} | {int(part['random_capped'].sum())} |"
        )
    lines += ["", "| exact solve (median of repeats) | max wall ms | max CPU ms | "
              "solves > 50 ms wall |", "|---|---:|---:|---:|"]
    for mode in ("counterfeit", "delete", "hybrid"):
        for suffix, label in (("", "no hint"), ("_hint", "with heuristic hint")):
            wall = results[f"{mode}{suffix}_ms"]
            cpu = results[f"{mode}{suffix}_cpu_ms"]
            lines.append(f"| {mode}, {label} | {wall.max():.1f} | {cpu.max():.1f} | "
                         f"{int((wall > 50).sum())} / {len(wall)} |")
    lines.append(f"\nAlgorithm 3: max {results['greedy_time_ms'].max():.0f} ms per instance.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: benchmarks/figures/"
                        "eligibility_adult.png, or the first free eligibility_adult_<n>.png)")
    parser.add_argument("--csv", type=Path, default=None, help="also write every measurement")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--from-csv", type=Path, default=None,
                        help="redraw the figure and summary from a --csv file, no solving")
    args = parser.parse_args()
    figure = results_path(args.figure, ROOT / "benchmarks" / "figures" / "eligibility_adult.png")
    print(f"figure: {figure}", file=sys.stderr)
    if args.from_csv is not None:
        results = pd.read_csv(args.from_csv)
        plot(results, figure, int(results["rows"].iloc[0]))
        print(summary(results))
        return
    if not args.data.is_file():
        sys.exit(f"Adult data not found at {args.data}; pass --data or set REPUBLISH_DATASETS.")
    adult = read_adult(args.data)
    # Warm up CP-SAT so that the first measured solve does not pay the library's start-up.
    solve_eligibility({"a": 5, "b": 3, "c": 1}, 2, "hybrid")
    records = []
    for column in adult.columns:
        if column == "age":
            continue
        counts = {str(k): int(v) for k, v in adult[column].value_counts().items()}
        for m in range(2, len(counts) + 1):
            print(f"{column} m={m}", file=sys.stderr, flush=True)
            records.append(measure(column, counts, m, args.repeats))
    results = pd.DataFrame.from_records(records)
    if args.csv is not None:
        results.to_csv(args.csv, index=False)
    plot(results, figure, len(adult))
    print(summary(results))


if __name__ == "__main__":
    main()
