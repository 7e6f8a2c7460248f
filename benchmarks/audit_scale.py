"""Speed of the intersection attack on a long, large series (the audit issue's target).

A census-like dynamic series (``--releases`` releases of ``--rows`` rows, ``r`` updates
per release) is published release by release as an l-diverse Mondrian table (interval
model), or m-invariantly with ``--method m-invariance``; the releases and
``knowledge.csv`` are written as files; then the audit runs twice: on the in-memory
tables and from the files (reading included, as ``republish audit`` does). Target: at
most 30 s for 20 releases of 200k rows.

    /tmp/venv/bin/python benchmarks/audit_scale.py [--rows 200000] [--releases 20] [--r 10000]
        [--method mondrian|m-invariance] [--l 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from republish.audit.intersection import intersection_attack
from republish.audit.knowledge import make_knowledge, read_knowledge
from republish.datasets import dynamic_series, synthetic_census
from republish.generalization import generalize
from republish.heuristics.mondrian import mondrian_table
from republish.release import read_published
from republish.solver.m_invariance import publish_m_invariant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--r", type=int, default=10_000)
    parser.add_argument("--l", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--method", choices=["mondrian", "m-invariance"], default="mondrian")
    args = parser.parse_args()
    table, schema = synthetic_census(args.rows + (args.releases - 1) * args.r, args.seed)
    series = dynamic_series(table, args.rows, args.r, args.releases, seed=args.seed)
    start = time.perf_counter()
    published = []
    state = None
    rng = np.random.default_rng(args.seed)
    for microdata in series:
        if args.method == "mondrian":
            partition = mondrian_table(microdata, schema, args.l)
            published.append(generalize(microdata, partition.groups, schema, "interval"))
        else:
            step = publish_m_invariant(microdata, schema, args.l, previous=state, rng=rng)
            state = step.state
            published.append(step.release.published)
    print(f"published {args.releases} x {args.rows} rows ({args.method}, l or m = {args.l}) "
          f"in {time.perf_counter() - start:.1f} s")
    position = pd.Series(np.arange(len(table)), index=table["id"].to_numpy())
    presence = np.zeros((len(table), len(series)), dtype=bool)
    for j, microdata in enumerate(series):
        presence[position.loc[microdata["id"].to_numpy()].to_numpy(), j] = True
    knowledge = make_knowledge(table, presence, schema)

    start, cpu = time.perf_counter(), time.process_time()
    audit = intersection_attack(published, knowledge)
    memory_s, memory_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"in memory: {memory_s:.1f} s wall, {memory_cpu:.1f} s CPU, {len(audit.rows)} "
          f"tuples, {int(audit.vulnerable.sum())} vulnerable")

    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        paths = []
        for j, frame in enumerate(published):
            path = folder / f"release-{j + 1}.csv"
            frame.iloc[np.random.default_rng(j).permutation(len(frame))].to_csv(path, index=False)
            paths.append(path)
        knowledge_path = knowledge.write(folder / "knowledge.csv")
        start, cpu = time.perf_counter(), time.process_time()
        frames = [read_published(path) for path in paths]
        read_back = read_knowledge(knowledge_path, schema, release_count=len(paths))
        read_s = time.perf_counter() - start
        audit_files = intersection_attack(frames, read_back)
        files_s, files_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"from files: {files_s:.1f} s wall ({read_s:.1f} s reading), {files_cpu:.1f} s CPU, "
          f"{int(audit_files.vulnerable.sum())} vulnerable")
    assert np.array_equal(audit.sizes, audit_files.sizes)


if __name__ == "__main__":
    main()
