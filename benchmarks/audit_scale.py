"""Speed of the intersection attack on a long, large series (the audit issue's target).

A census-like dynamic series (``--releases`` releases of ``--rows`` rows, ``r`` updates
per release) is published release by release as an l-diverse Mondrian table (interval
model), or m-invariantly with ``--method m-invariance``; the releases and
``knowledge.csv`` are written as files; then the audit runs twice: on the in-memory
tables and from the files (reading included, as ``republish audit`` does). Target: at
most 30 s for 20 releases of 200k rows.

    .venv/bin/python benchmarks/audit_scale.py [--rows 200000] [--releases 20] [--r 10000]
        [--method mondrian|m-invariance] [--l 2] [--mode auto|heuristic|exact]
        [--format csv|parquet] [--compare-object | --no-compare-object]

Memory (issue 17, 20 releases of 2M rows in a few GiB): the series is drawn as row
positions into the census table and each ``T(j)`` is taken only while it is published;
each release's file is written as soon as it is published, and the in-memory audit keeps
only the published tables, with their text columns as pandas categoricals (a code per
row instead of a Python string pointer). :func:`intersection_attack` reads categoricals
through their codes; ``--compare-object`` (default up to 500,000 rows) also keeps the
tables as published (object columns) and asserts that both audits give the same sizes,
masks and vulnerable counts. The file audit reads the files as ``republish audit`` does
(:func:`republish.release.read_published`, object columns). Peak memory is printed per
phase (``ru_maxrss`` of this process; the split's worker processes are not included).
"""

from __future__ import annotations

import argparse
import gc
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from republish.audit.intersection import IntersectionAudit, intersection_attack
from republish.audit.knowledge import make_knowledge, read_knowledge
from republish.datasets import dynamic_series, synthetic_census
from republish.generalization import generalize
from republish.heuristics.mondrian import mondrian_table
from republish.release import read_published
from republish.solver.m_invariance import publish_m_invariant

ROW = "_row"


def peak_gib() -> float:
    """Peak resident memory of this process so far (GiB; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def compact(frame: pd.DataFrame) -> pd.DataFrame:
    """The published table with its text columns as categoricals (same values)."""
    return frame.assign(**{
        column: frame[column].astype("category")
        for column in frame.columns if frame[column].dtype == object
    })


def take(table: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """``T(j)`` from its row positions, as :func:`dynamic_series` takes it."""
    taken = table.iloc[rows]
    taken.index = pd.RangeIndex(len(taken))
    return taken


def same_audit(a: IntersectionAudit, b: IntersectionAudit) -> bool:
    return (np.array_equal(a.rows, b.rows) and np.array_equal(a.sizes, b.sizes)
            and np.array_equal(a.masks, b.masks) and a.values == b.values
            and np.array_equal(a.releases, b.releases))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--r", type=int, default=10_000)
    parser.add_argument("--l", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--method", choices=["mondrian", "m-invariance"], default="mondrian")
    parser.add_argument("--mode", choices=["auto", "heuristic", "exact"], default="auto",
                        help="publish_m_invariant's mode (m-invariance only)")
    parser.add_argument("--format", choices=["csv", "parquet"], default="csv",
                        help="format of the release files the file audit reads")
    parser.add_argument("--compare-object", action=argparse.BooleanOptionalAction,
                        default=None, help="also audit the object-column tables and assert "
                        "equal results (default: up to 500,000 rows)")
    parser.add_argument("--directory", type=Path, default=None,
                        help="where to write the files (default: a temporary folder)")
    args = parser.parse_args()
    compare = args.compare_object if args.compare_object is not None else args.rows <= 500_000
    table, schema = synthetic_census(args.rows + (args.releases - 1) * args.r, args.seed)
    # The series as row positions: dynamic_series on a one-column frame draws the same
    # rows (its draws depend on the table's length only) without 20 copies of the table.
    positions = [
        frame[ROW].to_numpy() for frame in dynamic_series(
            pd.DataFrame({ROW: np.arange(len(table))}), args.rows, args.r, args.releases,
            seed=args.seed, identifier=ROW)
    ]

    if compare:  # the same tables as dynamic_series(table, ...) gives
        reference = dynamic_series(table, args.rows, args.r, args.releases, seed=args.seed)
        for j in (0, args.releases - 1):
            pd.testing.assert_frame_equal(take(table, positions[j]), reference[j])
        del reference
    presence = np.zeros((len(table), args.releases), dtype=bool)
    for j, rows in enumerate(positions):
        presence[rows, j] = True
    knowledge = make_knowledge(table, presence, schema)

    with tempfile.TemporaryDirectory(dir=args.directory) as directory:
        folder = Path(directory)
        paths = []
        published: list[pd.DataFrame] = []
        objects: list[pd.DataFrame] = []
        start, cpu = time.perf_counter(), time.process_time()
        write_s = 0.0
        state = None
        rng = np.random.default_rng(args.seed)
        for j in range(args.releases):
            microdata = take(table, positions[j])
            if args.method == "mondrian":
                partition = mondrian_table(microdata, schema, args.l)
                frame = generalize(microdata, partition.groups, schema, "interval")
            else:
                step = publish_m_invariant(microdata, schema, args.l, previous=state, rng=rng,
                                           mode=args.mode)
                state = step.state
                frame = step.release.published
                del step
            del microdata
            written = time.perf_counter()
            path = folder / f"release-{j + 1}.{args.format}"
            shuffled = frame.iloc[np.random.default_rng(j).permutation(len(frame))]
            if args.format == "csv":
                shuffled.to_csv(path, index=False)
            else:
                shuffled.reset_index(drop=True).to_parquet(path, index=False)
            del shuffled
            paths.append(path)
            write_s += time.perf_counter() - written
            published.append(compact(frame))
            if compare:
                objects.append(frame)
            del frame
            print(f"  release {j + 1}: {time.perf_counter() - start:.1f} s, peak "
                  f"{peak_gib():.2f} GiB", flush=True)
        publish_s = time.perf_counter() - start - write_s
        publish_cpu = time.process_time() - cpu
        del state, table, positions
        gc.collect()
        print(f"published {args.releases} x {args.rows} rows ({args.method}, l or m = {args.l}"
              f"{', mode ' + args.mode if args.method == 'm-invariance' else ''}) in "
              f"{publish_s:.1f} s wall, {publish_cpu:.1f} s CPU (this process; files "
              f"written in another {write_s:.1f} s); peak {peak_gib():.2f} GiB", flush=True)

        start, cpu = time.perf_counter(), time.process_time()
        audit = intersection_attack(published, knowledge)
        memory_s, memory_cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"in memory: {memory_s:.1f} s wall, {memory_cpu:.1f} s CPU, {len(audit.rows)} "
              f"tuples, {int(audit.vulnerable.sum())} vulnerable; peak {peak_gib():.2f} GiB",
              flush=True)
        if compare:
            start = time.perf_counter()
            audit_objects = intersection_attack(objects, knowledge)
            print(f"object columns: {time.perf_counter() - start:.1f} s wall, "
                  f"{int(audit_objects.vulnerable.sum())} vulnerable", flush=True)
            assert same_audit(audit, audit_objects), "categorical and object audits differ"
            del audit_objects
        del published, objects
        gc.collect()

        knowledge_path = knowledge.write(folder / "knowledge.csv")
        del knowledge
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        # knowledge.csv first: its reading peaks at about twice what it keeps, better
        # before the releases are held than after
        read_back = read_knowledge(knowledge_path, schema, release_count=len(paths))
        frames = [read_published(path) for path in paths]
        read_s = time.perf_counter() - start
        audit_files = intersection_attack(frames, read_back)
        files_s, files_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"from files ({args.format}): {files_s:.1f} s wall ({read_s:.1f} s reading), "
          f"{files_cpu:.1f} s CPU, {int(audit_files.vulnerable.sum())} vulnerable; peak "
          f"{peak_gib():.2f} GiB", flush=True)
    assert np.array_equal(audit.sizes, audit_files.sizes)
    assert int(audit.vulnerable.sum()) == int(audit_files.vulnerable.sum())


if __name__ == "__main__":
    main()
