"""Scaling of an m-invariant release with the table size (issue 17, item 5).

For every size ``n`` (rows of the table, ``r = n / 5`` changed rows per release), runs
``benchmarks/scale_release.py --skip-cli`` (the Python API in a fresh process, m = 10,
two releases) and records release 2's wall time, CPU time (the process's and its finished
children's: from 1,000,000 rows the split runs on local worker processes by default) and
the peak memory of the process and of its largest worker; then fits the growth exponent
``b`` of ``time ~ a·n^b`` (least squares on logarithms; 1.0 is linear, n log n shows as
~1.05-1.1 over this range). Prints a Markdown table and, with ``--plot``, writes
``benchmarks/figures/scale_release.png`` (``scale_release_modes.png`` for other ``--modes``),
or, when that exists (RESULTS.md cites it), the first free ``scale_release_2.png``, ...
beside it; ``--figure`` writes exactly there.

Usage::

    python benchmarks/scale_figure.py --sizes 20000 50000 100000            # smoke run
    nice -n 10 python benchmarks/scale_figure.py --sizes 200000 1000000 2000000 5000000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from output_paths import results_path  # benchmarks/ is the script's folder

HERE = Path(__file__).resolve().parent


def measure(rows: int, folder: str | None, mode: str = "heuristic") -> dict[str, object]:
    command = [sys.executable, str(HERE / "scale_release.py"), "--rows", str(rows),
               "--r", str(rows // 5), "--skip-cli", "--solver", mode]
    if folder:
        command += ["--folder", folder]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    last = result["api"]["releases"][-1]
    return {"rows": rows, "mode": mode, "wall_s": last["wall_s"], "cpu_s": last["cpu_s"],
            "split_s": last["phases"].get("split", 0.0), "verify_s":
            last["phases"].get("verify", 0.0), "peak_gib": result["api"]["peak_gib"],
            "worker_peak_gib": result["api"].get("worker_peak_gib", 0.0)}


def _record(data: dict) -> dict:  # type: ignore[type-arg]
    """A record of this script, or the summary line of ``scale_release.py`` (its API
    part: release 2)."""
    if "api" not in data:
        return data
    last = data["api"]["releases"][-1]
    return {"rows": data["rows"], "mode": data.get("solver", "heuristic"),
            "wall_s": last["wall_s"], "cpu_s": last["cpu_s"],
            "split_s": last["phases"].get("split", 0.0),
            "verify_s": last["phases"].get("verify", 0.0), "peak_gib": data["api"]["peak_gib"],
            "worker_peak_gib": data["api"].get("worker_peak_gib", 0.0)}


def exponent(sizes: list[float], times: list[float]) -> float:
    slope, _ = np.polyfit(np.log(sizes), np.log(times), 1)
    return float(slope)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 50_000, 100_000])
    parser.add_argument("--folder")
    parser.add_argument("--plot", action="store_true")
    parser.add_argument("--modes", nargs="+", default=["heuristic"],
                        choices=["heuristic", "auto"], help="solver modes measured at "
                        "every size (the figure has one line per mode)")
    parser.add_argument("--records", help="a file of the JSON lines a run printed (this "
                        "script's, or scale_release.py's summary lines): table, fit and plot "
                        "from it instead of measuring")
    parser.add_argument("--figure", type=Path, default=None,
                        help="with --plot: written exactly there (default: figures/"
                        "scale_release.png or scale_release_modes.png, or the first free "
                        "..._<n>.png when it exists)")
    args = parser.parse_args()
    records = []
    if args.records:
        lines = Path(args.records).read_text().splitlines()
        records = [_record(json.loads(line)) for line in lines if line.startswith('{"rows"')]
    for rows in [] if args.records else args.sizes:
        for mode in args.modes:
            record = measure(rows, args.folder, mode)
            records.append(record)
            print(json.dumps(record), flush=True)
    print("| mode | rows | r | release 2 wall s | CPU s | split s | verify s | peak GiB | "
          "worker peak GiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in records:
        print(f"| {r.get('mode', 'heuristic')} | {r['rows']:,} | {r['rows'] // 5:,} | "
              f"{r['wall_s']} | {r['cpu_s']} | {r['split_s']} | {r['verify_s']} | "
              f"{r['peak_gib']} | {r.get('worker_peak_gib', 0.0)} |")
    modes = list(dict.fromkeys(str(r.get("mode", "heuristic")) for r in records))
    by_mode = {m: [r for r in records if r.get("mode", "heuristic") == m] for m in modes}
    for mode, rows_of in by_mode.items():
        sizes = [r["rows"] for r in rows_of]
        if len(sizes) >= 2:
            print(f"growth exponent ({mode}): wall "
                  f"{exponent(sizes, [r['wall_s'] for r in rows_of]):.2f}, CPU "
                  f"{exponent(sizes, [r['cpu_s'] for r in rows_of]):.2f}, peak memory "
                  f"{exponent(sizes, [r['peak_gib'] for r in rows_of]):.2f}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import NullFormatter

        figure, (axis, memory) = plt.subplots(1, 2, figsize=(9, 3.5))
        for mode, rows_of in by_mode.items():
            sizes = [r["rows"] for r in rows_of]
            axis.loglog(sizes, [r["cpu_s"] for r in rows_of], "o-",
                        label=f"{mode}: CPU s (release 2)")
            axis.loglog(sizes, [r["wall_s"] for r in rows_of], "s--", label=f"{mode}: wall s")
            memory.loglog(sizes, [r["peak_gib"] for r in rows_of], "o-", label=mode)
        for panel, label in ((axis, "seconds"), (memory, "peak RSS GiB")):
            panel.xaxis.set_minor_formatter(NullFormatter())
            panel.set_xlabel("rows")
            panel.set_ylabel(label)
            panel.legend(fontsize=8)
            panel.grid(True, which="both", alpha=0.3)
        (HERE / "figures").mkdir(exist_ok=True)
        figure.tight_layout()
        name = "scale_release.png" if modes == ["heuristic"] else "scale_release_modes.png"
        path = results_path(args.figure, HERE / "figures" / name)
        figure.savefig(path, dpi=120)
        print(f"figure written to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
