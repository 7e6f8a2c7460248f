"""Scaling of an m-invariant release with the table size (issue 17, item 5).

For every size ``n`` (rows of the table, ``r = n / 5`` changed rows per release), runs
``benchmarks/scale_release.py --skip-cli`` (the Python API in a fresh process, heuristic
mode, m = 10, two releases) and records release 2's wall time, CPU time and the process's
peak memory; then fits the growth exponent ``b`` of ``time ~ a·n^b`` (least squares on
logarithms; 1.0 is linear, n log n shows as ~1.05-1.1 over this range). Prints a Markdown
table and writes ``benchmarks/figures/scale_release.png``.

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

HERE = Path(__file__).resolve().parent


def measure(rows: int, folder: str | None) -> dict[str, float]:
    command = [sys.executable, str(HERE / "scale_release.py"), "--rows", str(rows),
               "--r", str(rows // 5), "--skip-cli"]
    if folder:
        command += ["--folder", folder]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    last = result["api"]["releases"][-1]
    return {"rows": rows, "wall_s": last["wall_s"], "cpu_s": last["cpu_s"],
            "split_s": last["phases"].get("split", 0.0), "verify_s":
            last["phases"].get("verify", 0.0), "peak_gib": result["api"]["peak_gib"]}


def _record(data: dict) -> dict:  # type: ignore[type-arg]
    """A record of this script, or the summary line of ``scale_release.py`` (its API
    part: release 2)."""
    if "api" not in data:
        return data
    last = data["api"]["releases"][-1]
    return {"rows": data["rows"], "wall_s": last["wall_s"], "cpu_s": last["cpu_s"],
            "split_s": last["phases"].get("split", 0.0),
            "verify_s": last["phases"].get("verify", 0.0), "peak_gib": data["api"]["peak_gib"]}


def exponent(sizes: list[float], times: list[float]) -> float:
    slope, _ = np.polyfit(np.log(sizes), np.log(times), 1)
    return float(slope)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 50_000, 100_000])
    parser.add_argument("--folder")
    parser.add_argument("--plot", action="store_true")
    parser.add_argument("--records", help="a file of the JSON lines a run printed (this "
                        "script's, or scale_release.py's summary lines): table, fit and plot "
                        "from it instead of measuring")
    args = parser.parse_args()
    records = []
    if args.records:
        lines = Path(args.records).read_text().splitlines()
        records = [_record(json.loads(line)) for line in lines if line.startswith('{"rows"')]
    for rows in [] if args.records else args.sizes:
        record = measure(rows, args.folder)
        records.append(record)
        print(json.dumps(record), flush=True)
    print("| rows | r | release 2 wall s | CPU s | split s | verify s | peak GiB |")
    print("|---|---|---|---|---|---|---|")
    for r in records:
        print(f"| {r['rows']:,} | {r['rows'] // 5:,} | {r['wall_s']} | {r['cpu_s']} | "
              f"{r['split_s']} | {r['verify_s']} | {r['peak_gib']} |")
    sizes = [r["rows"] for r in records]
    if len(sizes) >= 2:
        print(f"growth exponent: wall {exponent(sizes, [r['wall_s'] for r in records]):.2f}, "
              f"CPU {exponent(sizes, [r['cpu_s'] for r in records]):.2f}, peak memory "
              f"{exponent(sizes, [r['peak_gib'] for r in records]):.2f}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import NullFormatter

        figure, axis = plt.subplots(figsize=(5, 3.5))
        axis.loglog(sizes, [r["cpu_s"] for r in records], "o-", label="CPU s (release 2)")
        axis.loglog(sizes, [r["wall_s"] for r in records], "s--", label="wall s")
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.set_xlabel("rows")
        axis.set_ylabel("seconds")
        axis.legend()
        axis.grid(True, which="both", alpha=0.3)
        (HERE / "figures").mkdir(exist_ok=True)
        figure.tight_layout()
        figure.savefig(HERE / "figures" / "scale_release.png", dpi=120)


if __name__ == "__main__":
    main()
