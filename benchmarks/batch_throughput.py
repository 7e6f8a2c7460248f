"""Batch throughput with 1 and 2 local workers, and the heuristic-vs-optimum table.

Runs the sweep of ``benchmarks/batch_sweep.toml`` (principles x m x methods over UCI
Adult and the synthetic census; 164 instances) once per worker count (``--repeat``:
alternating, several times), from cold worker processes to the consolidated results
file, and reports instances per second, the speed-up, whether every objective agrees
between the runs (each instance is deterministic given its seed and a single CP-SAT
worker, unless a time limit stops its search), the per-method summary and every method
against the optimum of its instance. Adult instances are left out when the
shared data set is absent.

    /tmp/venv/bin/python benchmarks/batch_throughput.py [--workers 1 2] [--repeat 3] [--append]

Writes the results tables under ``--out`` (default a temporary directory), the figures
``benchmarks/figures/batch_heuristic_vs_optimum.png`` and ``batch_time_vs_size.png`` (or,
when either exists -- RESULTS.md cites them -- the first free ``..._2.png``, ... beside
them), prints a Markdown section naming them, and with ``--append`` adds it to
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import resource
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import pandas as pd
from output_paths import free_paths  # benchmarks/ is the script's folder

from republish.batch.execute import run_batch
from republish.batch.manifest import Manifest, load_manifest
from republish.batch.report import (
    comparison_summary,
    method_summary,
    optimum_comparison,
    plot_optimum_comparison,
    plot_time_vs_size,
)
from republish.datasets import datasets_dir

HERE = Path(__file__).resolve().parent
SWEEP = HERE / "batch_sweep.toml"
FIGURES = HERE / "figures"


def _children_cpu() -> float:
    """CPU seconds of finished child processes (the batch's workers) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def without_adult(manifest: Manifest) -> Manifest:
    kept = tuple(i for i in manifest.instances if i.parameters.get("dataset") != "adult")
    return dataclasses.replace(manifest, instances=kept)


def markdown(frame: pd.DataFrame, digits: int = 3) -> str:
    """A pipe table (no extra dependency)."""
    def cell(value: object) -> str:
        if value is None or (isinstance(value, float) and pd.isna(value)):
            return "-"
        if isinstance(value, float):
            return f"{value:.{digits}g}"
        return str(value)

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |",
             "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, default=SWEEP)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1, help="alternating runs per count")
    parser.add_argument("--out", type=Path, default=None, help="directory for results tables")
    parser.add_argument("--append", action="store_true", help="append to benchmarks/RESULTS.md")
    args = parser.parse_args()

    manifest = load_manifest(args.manifest)
    if datasets_dir() is None:
        manifest = without_adult(manifest)
        print("Adult data set absent: its instances are left out.", file=sys.stderr)
    out = args.out or Path(tempfile.mkdtemp(prefix="batch-throughput-"))
    out.mkdir(parents=True, exist_ok=True)

    runs = []
    frames: dict[int, pd.DataFrame] = {}
    for repeat in range(1, args.repeat + 1):
        for workers in args.workers:  # alternate, so slow phases of other jobs hit both
            load = os.getloadavg()[0]
            cpu_before = _children_cpu()
            start = time.perf_counter()
            result = run_batch(manifest, out / f"sweep-w{workers}.parquet", workers=workers,
                               overwrite=True)
            elapsed = time.perf_counter() - start
            worker_cpu = _children_cpu() - cpu_before
            frames[workers] = result.frame
            statuses = result.frame["status"].value_counts().to_dict()
            runs.append({
                "repeat": repeat, "workers": workers, "instances": len(result.frame),
                "wall_s": elapsed, "instances_per_s": len(result.frame) / elapsed,
                "instance_s": float(result.frame["wall_time_s"].sum()),
                "worker_cpu_s": worker_cpu,
                "load_avg_before": load,
                "statuses": ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
            })
            print(f"run {repeat}, {workers} worker(s): {elapsed:.1f} s", file=sys.stderr)
    table = pd.DataFrame(runs)
    # Share of the run during which the workers were inside an instance: what is left
    # is start-up, dispatch and the tail; CPU contention from other jobs is not in it.
    table["worker_busy"] = table["instance_s"] / (table["workers"] * table["wall_s"])
    # CPU the worker processes got per second inside an instance (1 on an idle machine).
    table["cpu_share"] = table["worker_cpu_s"] / table["instance_s"]
    base = table[table["workers"] == args.workers[0]].set_index("repeat")["wall_s"]
    table["speedup"] = base.reindex(table["repeat"]).to_numpy() / table["wall_s"]
    medians = table.groupby("workers")["wall_s"].median()
    median_speedup = {w: float(medians[args.workers[0]] / medians[w]) for w in args.workers}
    # On an idle machine each worker gets a whole core (cpu_share = 1): the wall time is
    # then the workers' CPU time spread over them, divided by how busy they were.
    idle = table.assign(idle_s=table["worker_cpu_s"] / (table["workers"] * table["worker_busy"]))
    idle_medians = idle.groupby("workers")["idle_s"].median()
    projected = {w: float(idle_medians[args.workers[0]] / idle_medians[w]) for w in args.workers}

    first = frames[args.workers[0]].set_index("instance_id").sort_index()
    last_indexed = frames[args.workers[-1]].set_index("instance_id").sort_index()
    equal = (first["objective"] == last_indexed["objective"]) | (
        first["objective"].isna() & last_indexed["objective"].isna())
    # A search stopped by its time limit (FEASIBLE) depends on the machine's speed.
    untimed = (first["status"] != "FEASIBLE") & (last_indexed["status"] != "FEASIBLE")
    last = frames[args.workers[-1]]

    comparison = optimum_comparison(last)
    FIGURES.mkdir(parents=True, exist_ok=True)
    optimum_figure, time_figure = free_paths(FIGURES / "batch_heuristic_vs_optimum.png",
                                             FIGURES / "batch_time_vs_size.png")
    plot_optimum_comparison(comparison, optimum_figure)
    plot_time_vs_size(last, time_figure)

    command = "/tmp/venv/bin/python benchmarks/batch_throughput.py " + " ".join(sys.argv[1:])
    section = "\n".join([
        "## Batch solving: throughput and heuristics against optima",
        "",
        f"Command: `{command.strip()}` (sweep `{args.manifest.name}`, {len(manifest.instances)}"
        " instances: release series, group formation, l-diversity and m-eligibility over "
        "Adult and the synthetic census).",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}, Python "
        f"{platform.python_version()}. Date: {date.today().isoformat()}.",
        "Wall time from cold worker processes to the consolidated Parquet file. "
        "Other jobs shared the machine (load average before each run in the table).",
        "",
        markdown(table[["repeat", "workers", "instances", "wall_s", "instances_per_s",
                        "speedup", "instance_s", "worker_busy", "worker_cpu_s", "cpu_share",
                        "load_avg_before", "statuses"]]),
        "",
        "Speed-up of the median wall times: " + ", ".join(
            f"{w} worker(s) {median_speedup[w]:.2f}x" for w in args.workers) + ". "
        "Projected for an idle machine (every worker on its own core: wall = worker_cpu_s / "
        "(workers x worker_busy)): " + ", ".join(
            f"{w} worker(s) {projected[w]:.2f}x" for w in args.workers) + ".",
        "",
        "`instance_s` sums the wall time of the instances inside the workers; "
        "`worker_busy` = that sum / (workers x wall_s), the share of time the workers "
        "spent solving (the rest is start-up, dispatch and the tail of the batch); "
        "`worker_cpu_s` is the CPU time of the worker processes and `cpu_share` = "
        "worker_cpu_s / instance_s, the share of a core each worker got while solving "
        "(below 1 when other jobs compete for the cores).",
        "",
        f"Objectives equal between the last 1-worker and {args.workers[-1]}-worker runs: "
        f"{int(equal.sum())} of {len(equal)} instances; {int(equal[untimed].sum())} of "
        f"{int(untimed.sum())} among those no time limit stopped (status not FEASIBLE in "
        "either run).",
        "",
        "Per method (last run):",
        "",
        markdown(method_summary(last)),
        "",
        "Against the optimum of the same input (rows whose case has a proven-optimal "
        "answer; ratio = objective / optimum):",
        "",
        markdown(comparison_summary(comparison)),
        "",
        f"Figures: `benchmarks/figures/{optimum_figure.name}`, "
        f"`benchmarks/figures/{time_figure.name}`.",
        "",
    ])
    print(section)
    if args.append:
        with (HERE / "RESULTS.md").open("a", encoding="utf-8") as handle:
            handle.write("\n" + section)


if __name__ == "__main__":
    main()
