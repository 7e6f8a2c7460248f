"""Census-sized m-invariant releases: time and peak memory, in the API and through the CLI
(issue 17).

A synthetic census (:func:`republish.datasets.synthetic_census`) of ``rows + r·(releases-1)``
rows, a first release of ``rows`` rows, then ``r`` deletions and ``r`` insertions per
release (:func:`republish.datasets.dynamic_series`), m = 10, heuristic mode. The tables
are written as Parquet once; then

* ``api``: a fresh process reads them and runs :func:`republish.solver.publish.publish`
  release after release (time per release and its phases; peak RSS of the process);
* ``cli``: ``republish init`` and ``republish release t<j>.parquet --store S.db -o out/
  --solver heuristic --format parquet`` per release (wall time and peak RSS of each
  command, from ``/usr/bin/time``).

``--profile FILE`` writes a cProfile of the API's last release and prints its top
functions. Defaults are small, so the script smoke-runs in seconds::

    python benchmarks/scale_release.py                                  # 20k rows, r = 4k
    nice -n 10 python benchmarks/scale_release.py --rows 2000000 --r 400000 --profile p.out
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCHEMA_TOML = """id = "id"
sensitive = "occupation"
[[qi]]
name = "age"
kind = "numeric"
domain = [17.0, 95.0]
"""


def schema_toml() -> str:
    from republish.datasets import census_schema

    text = SCHEMA_TOML
    for qi in census_schema().qis[1:]:
        order = ", ".join(json.dumps(v) for v in qi.order or ())
        text += f'[[qi]]\nname = "{qi.name}"\nkind = "ordered"\norder = [{order}]\n'
    return text


def make_tables(folder: Path, rows: int, r: int, releases: int, seed: int) -> list[Path]:
    from republish.datasets import dynamic_series, synthetic_census

    table, _ = synthetic_census(rows + r * (releases - 1), seed=seed)
    paths = []
    for number, microdata in enumerate(dynamic_series(table, rows, r, releases, seed=seed),
                                       start=1):
        path = folder / f"t{number}.parquet"
        microdata.to_parquet(path, index=False)
        paths.append(path)
    (folder / "schema.toml").write_text(schema_toml())
    return paths


def run_api(paths: list[Path], m: int, seed: int, profile: str | None,
            scheduler: str | None = None, solver: str = "heuristic") -> dict[str, object]:
    """In this process: every release through the Python API; peak RSS at the end."""
    import numpy as np
    import pandas as pd

    from republish.datasets import census_schema
    from republish.solver.options import SolveOptions
    from republish.solver.publish import publish
    from republish.state import PublisherState
    from republish.tables import validate_table

    schema = census_schema()
    rng = np.random.default_rng(seed)
    state: PublisherState | None = None
    records = []
    extra = {} if scheduler is None else {"scheduler": scheduler}
    for number, path in enumerate(paths, start=1):
        table = validate_table(pd.read_parquet(path), schema)
        profiler = cProfile.Profile() if profile and number == len(paths) else None
        started, cpu = time.perf_counter(), time.process_time() + _children_cpu()
        if profiler:
            profiler.enable()
        result = publish(table, schema, "m-invariance", _options(m), state,
                         solve=SolveOptions(solver, **extra),  # type: ignore[arg-type]
                         rng=rng, validated=True)
        if profiler:
            profiler.disable()
            profiler.dump_stats(profile)  # type: ignore[arg-type]
        wall = time.perf_counter() - started
        cpu = time.process_time() + _children_cpu() - cpu
        state = result.state
        records.append({"release": number, "rows": result.rows, "wall_s": round(wall, 2),
                        "cpu_s": round(cpu, 2),
                        "counterfeits": result.counterfeits, "groups": result.groups,
                        "cost": round(float(result.extra.get("cost", float("nan"))), 1),
                        "phases": {k: round(v, 2) for k, v in result.certificate.times.items()}})
        del table, result
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    return {"releases": records, "peak_gib": round(peak, 2),
            "worker_peak_gib": round(children, 2)}


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the split's worker processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _options(m: int) -> object:
    from republish.principles.catalog import principle

    return principle("m-invariance").options_from_dict({"m": m})


def _timed(command: list[str]) -> tuple[float, float, float, str]:
    """Wall seconds, peak RSS (GiB), CPU seconds (user + system) and stdout of
    ``command`` (via /usr/bin/time -v)."""
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    peak = cpu = 0.0
    for line in done.stderr.splitlines():
        if "Maximum resident set size" in line:
            peak = int(line.rsplit(":", 1)[1]) / 2**20
        if "User time" in line or "System time" in line:
            cpu += float(line.rsplit(":", 1)[1])
    return wall, peak, cpu, done.stdout


def run_cli(folder: Path, paths: list[Path], m: int, seed: int) -> list[dict[str, object]]:
    republish = str(Path(sys.executable).with_name("republish"))
    store = folder / "S.db"
    _timed([republish, "init", "--store", str(store), "--schema", str(folder / "schema.toml"),
            "--m", str(m)])
    records = []
    for number, path in enumerate(paths, start=1):
        wall, peak, cpu, out = _timed([republish, "release", str(path), "--store", str(store),
                                  "-o", str(folder / "out"), "--solver", "heuristic",
                                  "--format", "parquet", "--seed", str(seed + number),
                                  "--json"])
        inside = json.loads(out)["wall_time_s"]
        records.append({"release": number, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                        "step_s": round(inside, 2), "peak_gib": round(peak, 2)})
        print(f"  cli release {number}: {wall:.1f} s (CPU {cpu:.1f} s, step {inside:.1f} s), "
              f"peak {peak:.2f} GiB", flush=True)
    wall, peak, cpu, _ = _timed([republish, "verify", "--store", str(store)])
    records.append({"release": "verify", "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                    "peak_gib": round(peak, 2)})
    print(f"  cli verify: {wall:.1f} s (CPU {cpu:.1f} s), peak {peak:.2f} GiB", flush=True)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--r", type=int, default=4_000)
    parser.add_argument("--releases", type=int, default=2)
    parser.add_argument("--m", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--solver", default="heuristic", choices=["heuristic", "auto"],
                        help="the API's solver mode (the CLI runs use heuristic)")
    parser.add_argument("--skip-api", action="store_true")
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--profile", help="cProfile output of the API's last release")
    parser.add_argument("--folder", help="work folder (default: a temporary one)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # the API measured in a fresh process
        paths = json.loads(args.child)
        print(json.dumps(run_api([Path(p) for p in paths], args.m, args.seed, args.profile,
                                 solver=args.solver)))
        return
    with tempfile.TemporaryDirectory(dir=args.folder) as work:
        folder = Path(work)
        started = time.perf_counter()
        paths = make_tables(folder, args.rows, args.r, args.releases, args.seed)
        print(f"{args.rows} rows, r = {args.r}, {args.releases} releases, m = {args.m}: "
              f"tables written in {time.perf_counter() - started:.1f} s", flush=True)
        results: dict[str, object] = {"rows": args.rows, "r": args.r, "m": args.m,
                                      "solver": args.solver, "load": os.getloadavg()[0]}
        if not args.skip_api:
            command = [sys.executable, __file__, "--m", str(args.m), "--seed", str(args.seed),
                       "--solver", args.solver, "--child", json.dumps([str(p) for p in paths])]
            if args.profile:
                command += ["--profile", args.profile]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            api = json.loads(done.stdout.strip().splitlines()[-1])
            results["api"] = api
            for record in api["releases"]:
                print(f"  api release {record['release']}: {record['wall_s']} s "
                      f"(CPU {record['cpu_s']} s) "
                      f"{record['phases']}", flush=True)
            print(f"  api peak {api['peak_gib']} GiB", flush=True)
        if not args.skip_cli:
            results["cli"] = run_cli(folder, paths, args.m, args.seed)
        print(json.dumps(results))
    if args.profile:
        out = io.StringIO()
        pstats.Stats(args.profile, stream=out).sort_stats("cumulative").print_stats(45)
        print(out.getvalue())


if __name__ == "__main__":
    main()
