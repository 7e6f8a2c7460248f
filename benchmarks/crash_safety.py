"""Crash safety of ``republish release`` (issue 18, item 6): SIGKILL at random points.

Each trial copies a store that already holds one published release, runs ``republish
release`` of the next table in a subprocess and kills it with SIGKILL at a random point.
The kill points cover the whole release: a third of the trials at a uniformly random time
after launch (interpreter start, loading, solving, rendering), the others at a random
moment after a publication checkpoint (files rendered, staged beside the store,
**committed** to the store -- the window between the commit and the file moves --, each
file moved into place, marked as published), each window widened by
``REPUBLISH_CHECKPOINT_DELAY`` so that every one is hit (trial i takes the i-th target of
a fixed cycle, so any 10 consecutive trials cover every checkpoint).

After each kill, before any command touches the store:

* the output folder holds no file of an uncommitted release, nor any other file (nothing
  a sync could publish), and the store's history is unchanged or exactly one longer;

then, in-process:

* ``republish verify --store S`` exits 0 (it finishes an interrupted publication, saying
  so) and the history length is what the store recorded;
* ``republish verify --store S --files OUT`` exits 0: every committed file is in place;
* no staging folder is left beside the store;
* after deleting the last release's files, ``republish export`` re-creates them byte for
  byte; an export into an empty folder equals OUT byte for byte;
* a further release on the recovered store succeeds (``--follow-up``; benchmark only).

Usage::

    python benchmarks/crash_safety.py --trials 50 [--rows 1500] [--seed 0] [--results]

``--results`` appends a section to benchmarks/RESULTS.md. ``tests/test_crash_safety.py``
runs 10 trials of this code on a smaller table.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

#: Kill targets, in the order trials take them: "time" is a random time after launch;
#: the others a random moment after that checkpoint of republish/cli/publication.py.
CYCLE = ("committed", "time", "staged", "moved release", "rendered", "time",
         "moved counts", "marked", "committed", "time")
CHECKPOINT_DELAY = 0.12
SCHEMA = """\
id = "id"
sensitive = "disease"
[[qi]]
name = "age"
kind = "numeric"
[[qi]]
name = "zip"
kind = "numeric"
[[qi]]
name = "sex"
kind = "ordered"
order = ["F", "M"]
"""


def cli(*args: str) -> tuple[int, str, str]:
    """``republish *args`` in this process: exit code, stdout, stderr."""
    from republish.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["republish", *args]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main()
                code: object = 0
            except SystemExit as exc:
                code = exc.code
    finally:
        sys.argv = argv
    return int(code) if isinstance(code, int) else 0, out.getvalue(), err.getvalue()


def tables(rows: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """T(1) and T(2): ``rows`` people, then 20 % deleted and as many new ones."""
    rng = np.random.default_rng(seed)
    diseases = np.array([f"d{i}" for i in range(8)])

    def people(first: int, n: int) -> pd.DataFrame:
        return pd.DataFrame({
            "id": np.arange(first, first + n),
            "age": rng.integers(18, 90, n),
            "zip": rng.integers(1000, 1100, n) * 10,
            "sex": rng.choice(["F", "M"], n),
            "disease": rng.choice(diseases, n),
        })

    first = people(1, rows)
    kept = first.sample(frac=0.8, random_state=seed)
    second = pd.concat([kept, people(rows + 1, rows - len(kept))], ignore_index=True)
    return first, second


@dataclass
class Template:
    """A store with release 1 published, and the table of release 2."""

    root: Path
    store: Path
    out: Path
    data: Path
    files: dict[str, bytes]


def make_template(root: Path, rows: int, seed: int) -> Template:
    root.mkdir(parents=True, exist_ok=True)
    (root / "schema.toml").write_text(SCHEMA)
    first, second = tables(rows, seed)
    first.to_csv(root / "t1.csv", index=False)
    second.to_csv(root / "t2.csv", index=False)
    store, out = root / "s.db", root / "out"
    for args in (("init", "--store", str(store), "--schema", str(root / "schema.toml"),
                  "--m", "3"),
                 ("release", str(root / "t1.csv"), "--store", str(store), "-o", str(out),
                  "--seed", "1", "--solver", "heuristic")):
        code, _, err = cli(*args)
        if code != 0:
            raise RuntimeError(f"template: {args[0]} failed: {err}")
    files = {p.name: p.read_bytes() for p in out.iterdir()}
    return Template(root, store, out, root / "t2.csv", files)


@dataclass
class Trial:
    index: int
    target: str
    at: float = 0.0
    reached: str = "start"
    finished: bool = False
    before: int = 0
    after: int = 0
    recovery_notes: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    workdir: Path = Path()

    @property
    def ok(self) -> bool:
        return not self.problems


def _release_args(store: Path, out: Path, data: Path, seed: int) -> list[str]:
    return ["release", str(data), "--store", str(store), "-o", str(out), "--seed", str(seed),
            "--solver", "heuristic"]


def _history(store: Path) -> int:
    # Opened read-write, as the next republish command opens it: a kill inside a
    # transaction leaves a hot journal, which SQLite rolls back on the first read, and a
    # read-only connection cannot ("attempt to write a readonly database").
    connection = sqlite3.connect(store)
    try:
        return int(connection.execute("SELECT COUNT(*) FROM releases").fetchone()[0])
    finally:
        connection.close()


def _last_checkpoint(log: Path) -> str:
    if not log.is_file():
        return "start"
    lines = [line.rsplit(" ", 1)[0] for line in log.read_text().splitlines() if line.strip()]
    return lines[-1] if lines else "start"


def kill_one(template: Template, trial: Trial, base: Path, rng: random.Random,
             launch_budget: float, delay: float = CHECKPOINT_DELAY) -> None:
    """Copy the template, launch the release, SIGKILL it at the trial's target."""
    work = base / f"trial-{trial.index:03d}"
    shutil.copytree(template.root, work)
    trial.workdir = work
    store, out, log = work / "s.db", work / "out", work / "checkpoints.log"
    trial.before = _history(store)
    env = dict(os.environ, REPUBLISH_CHECKPOINT_LOG=str(log),
               REPUBLISH_CHECKPOINT_DELAY=str(delay))
    command = [sys.executable, "-c", "from republish.cli import main; main()",
               *_release_args(store, out, work / "t2.csv", 7)]
    started = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    wanted = {"moved release": "moved release-", "moved counts": "moved counterfeits-"}.get(
        trial.target, trial.target)
    if trial.target == "time":
        deadline = started + rng.uniform(0.0, launch_budget)
    else:
        deadline = None
        while process.poll() is None:
            text = log.read_text() if log.is_file() else ""
            if any(line.startswith(wanted) for line in text.splitlines()):
                deadline = time.monotonic() + rng.uniform(0.0, delay * 1.5)
                break
            time.sleep(0.002)
    if deadline is not None:
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    else:
        trial.finished = True
    process.wait()
    trial.at = time.monotonic() - started
    trial.reached = _last_checkpoint(log)


def check_one(template: Template, trial: Trial, follow_up: bool) -> None:
    """The checks after a kill (see the module docstring); problems go to the trial."""
    started = time.monotonic()
    work = trial.workdir
    store, out = work / "s.db", work / "out"
    problems = trial.problems
    trial.after = after = _history(store)
    if after not in (trial.before, trial.before + 1):
        problems.append(f"history went from {trial.before} to {after}")
    allowed = {f"{kind}-{n}.csv" for n in range(1, after + 1)
               for kind in ("release", "counterfeits")}
    found = {p.name for p in out.iterdir()} if out.is_dir() else set()
    stray = sorted(found - allowed)
    if stray:
        problems.append(f"output folder holds files of no committed release: {stray}")
    code, _, err = cli("verify", "--store", str(store))
    trial.recovery_notes = err.count("note:")
    if code != 0:
        problems.append(f"verify exited {code}: {' '.join(err.split())[:300]}")
    if _history(store) != after:
        problems.append("verify changed the history")
    code, _, err = cli("verify", "--store", str(store), "--files", str(out))
    if code != 0:
        problems.append(f"verify --files exited {code}: {' '.join(err.split())[:300]}")
    staging = work / ".s.db.staging"
    if staging.exists() and any(staging.iterdir()):
        problems.append(f"staging left: {sorted(p.name for p in staging.iterdir())}")
    published = {p.name: p.read_bytes() for p in out.iterdir()}
    for name, data in template.files.items():
        if published.get(name) != data:
            problems.append(f"release 1 file {name} changed")
    lost = [name for name in published if name.endswith(f"-{after}.csv")]
    for name in lost:
        (out / name).unlink()
    code, _, err = cli("export", "--store", str(store), "-o", str(out))
    if code != 0:
        problems.append(f"export exited {code}: {' '.join(err.split())[:300]}")
    for name in lost:
        if not (out / name).is_file() or (out / name).read_bytes() != published[name]:
            problems.append(f"export did not re-create {name} byte for byte")
    fresh = work / "exported"
    code, _, err = cli("export", "--store", str(store), "-o", str(fresh))
    exported = {p.name: p.read_bytes() for p in fresh.iterdir()} if fresh.is_dir() else {}
    if code != 0 or exported != published:
        problems.append("export into an empty folder differs from the published folder")
    if follow_up:
        next_table = work / "t3.csv"
        frame = pd.read_csv(work / ("t2.csv" if after > trial.before else "t1.csv"))
        frame.to_csv(next_table, index=False)
        code, _, err = cli(*_release_args(store, out, next_table, 9))
        if code != 0 or _history(store) != after + 1:
            problems.append(f"follow-up release failed ({code}): {' '.join(err.split())[:300]}")
    trial.seconds = time.monotonic() - started


def launch_budget(template: Template, base: Path) -> float:
    """Seconds an uninterrupted release takes (checkpoint pauses included)."""
    work = base / "calibration"
    shutil.copytree(template.root, work)
    env = dict(os.environ, REPUBLISH_CHECKPOINT_DELAY=str(CHECKPOINT_DELAY))
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "from republish.cli import main; main()",
                    *_release_args(work / "s.db", work / "out", work / "t2.csv", 7)],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - started


def run_trials(trials: int, root: Path, *, rows: int = 1500, seed: int = 0,
               parallel: int = 2, follow_up: bool = False, delay: float = CHECKPOINT_DELAY,
               budget: float | None = None) -> tuple[list[Trial], float]:
    """Run ``trials`` kill trials under ``root``; the trials and the time of an
    uninterrupted release (measured unless ``budget`` gives it)."""
    template = make_template(root / "template", rows, seed)
    if budget is None:
        budget = launch_budget(template, root)
    rng = random.Random(seed)
    plan = [Trial(i, CYCLE[i % len(CYCLE)]) for i in range(trials)]
    seeds = [rng.random() for _ in plan]
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(lambda t: kill_one(template, t, root, random.Random(seeds[t.index]),
                                         budget, delay), plan))
    for trial in plan:
        check_one(template, trial, follow_up)
    return plan, budget


def summary(trials: Sequence[Trial]) -> dict[str, object]:
    committed = sum(t.after > t.before for t in trials)
    between = sum(t.after > t.before and not t.reached.startswith("marked")
                  and not t.finished for t in trials)
    return {
        "trials": len(trials),
        "passed": sum(t.ok for t in trials),
        "killed": sum(not t.finished for t in trials),
        "committed": committed,
        "killed_between_commit_and_files_marked": between,
        "recovered_with_a_note": sum(t.recovery_notes > 0 for t in trials),
        "reached": dict(Counter(t.reached.split(" ")[0] + (
            " " + t.reached.split(" ")[1].split("-")[0] if t.reached.startswith("moved") else "")
            for t in trials)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--rows", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--no-follow-up", action="store_true")
    parser.add_argument("--results", action="store_true",
                        help="append a section to benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="crash-") as folder:
        trials, budget = run_trials(args.trials, Path(folder), rows=args.rows,
                                    seed=args.seed, parallel=args.parallel,
                                    follow_up=not args.no_follow_up)
    elapsed = time.monotonic() - started
    facts = summary(trials)
    for trial in trials:
        state = "ok" if trial.ok else "FAIL " + "; ".join(trial.problems)
        print(f"trial {trial.index:3d} target {trial.target:13s} killed at {trial.at:5.2f} s "
              f"after {trial.reached:24s} history {trial.before}->{trial.after} {state}")
    print(facts)
    print(f"uninterrupted release {budget:.2f} s; total {elapsed:.0f} s")
    if args.results:
        append_results(args, facts, budget, elapsed)
    return 0 if facts["passed"] == facts["trials"] else 1


def append_results(args: argparse.Namespace, facts: dict[str, object], budget: float,
                   elapsed: float) -> None:
    command = (f"python benchmarks/crash_safety.py --trials {args.trials} --rows {args.rows} "
               f"--seed {args.seed} --parallel {args.parallel} --results")
    machine = (f"{platform.machine()}, {os.cpu_count()} cores, Python "
               f"{platform.python_version()}, {platform.system()}")
    reached = ", ".join(f"{k} {v}" for k, v in sorted(facts["reached"].items()))  # type: ignore[union-attr]
    header = ["trials", "all checks passed", "killed", "killed after the commit",
              "... before the files were marked in place", "recovered with a note"]
    keys = ["trials", "passed", "killed", "committed",
            "killed_between_commit_and_files_marked", "recovered_with_a_note"]
    follow = ", and a further release succeeds" if not args.no_follow_up else ""
    text = "\n".join([
        "",
        f"## Crash safety: SIGKILL of `republish release` at random points ({date.today()})",
        "",
        f"Command: `{command}` — {machine}. Total {elapsed:.0f} s (an uninterrupted release "
        f"of {args.rows} rows takes {budget:.2f} s with the {CHECKPOINT_DELAY} s checkpoint "
        "pauses; trials run two at a time).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---:|" * len(header),
        "| " + " | ".join(str(facts[k]) for k in keys) + " |",
        "",
        f"Last checkpoint reached before the kill: {reached}. After every kill: no file of "
        "an uncommitted release in the output folder, history unchanged or one longer, "
        "`verify` and `verify --files` exit 0 (the interrupted publication finished by the "
        "next command), no staging left, `export` re-creates deleted files byte for byte "
        f"and an export into an empty folder equals the published folder{follow}.",
        "",
    ])
    results = Path(__file__).resolve().parent / "RESULTS.md"
    with results.open("a", encoding="utf-8") as stream:
        stream.write(text)


if __name__ == "__main__":
    sys.exit(main())
