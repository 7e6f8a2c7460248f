"""Shared pieces of the m-invariance experiment scripts (issue 19, items 1-4).

* :func:`series_table` -- the census-like table with a chosen SA distribution;
* :func:`run_series` -- publish a dynamic series, one record per release (counterfeits,
  deferrals, buckets/signatures, wall and CPU time), optionally keeping the releases.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from republish.datasets import dynamic_series, synthetic_census
from republish.schema import Schema
from republish.solver.m_invariance import publish_m_invariant
from republish.state import PublisherState

MACHINE = "x86_64, 2 cores, shared"
POLICIES = ("assign", "reuse", "exact")


def series_table(rows: int, seed: int, distribution: str) -> tuple[pd.DataFrame, Schema]:
    return synthetic_census(rows, seed=seed, sensitive_distribution=distribution)


def run_series(
    table: pd.DataFrame, schema: Schema, initial: int, r: int, m: int, seed: int,
    policy: str = "assign", max_releases: int | None = None, time_limit: float = 5.0,
    keep: Callable[[int, pd.DataFrame, Any], None] | None = None, label: str = "",
) -> list[dict[str, object]]:
    """Publish ``dynamic_series(table, initial, r, ...)`` with ``policy`` (``assign``: the
    paper's phases, ``mode='heuristic'``; ``reuse``: the same with ``assign="reuse"``
    (:mod:`republish.heuristics.assign_reuse`);
    ``exact``: ``mode='exact'`` with ``time_limit`` s per release). ``keep(number,
    microdata, result)`` sees every release (e.g. to measure query error)."""
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r}: use one of {POLICIES}")
    releases = 1 + (len(table) - initial) // r
    if max_releases is not None:
        releases = min(releases, max_releases)
    series = dynamic_series(table, initial, r, releases, seed=seed)
    state: PublisherState | None = None
    rng = np.random.default_rng(seed)
    records: list[dict[str, object]] = []
    mode = "exact" if policy == "exact" else "heuristic"
    assign = "reuse" if policy == "reuse" else "paper"
    for number, microdata in enumerate(series, start=1):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = publish_m_invariant(
            microdata, schema, m, state, rng=rng, validated=True, mode=mode,  # type: ignore[arg-type]
            time_limit=time_limit, assign=assign,
        )
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        state = result.state
        times = result.certificate.times
        records.append({
            "label": label, "policy": policy, "m": m, "r": r, "release": number,
            "rows": result.rows, "new": result.new, "deleted": result.deleted,
            "counterfeits": result.counterfeits, "deferred": result.deferred,
            "groups": result.groups, "signatures": len(state.signatures),
            "mean_perimeter": result.mean_perimeter, "wall_s": wall, "cpu_s": cpu,
            "verify_s": times.get("verify", 0.0), "status": result.certificate.status,
            "load_average": os.getloadavg()[0],
        })
        if keep is not None:
            keep(number, microdata, result)
        series[number - 1] = microdata.iloc[:0]
        print(f"{label} {policy} m={m} r={r} release {number}/{len(series)}: "
              f"{result.counterfeits} counterfeits, {len(state.signatures)} signatures, "
              f"{wall:.2f} s", flush=True)
    return records


def counterfeit_summary(results: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Max, mean and zero-count of counterfeits per ``keys``; release 1 included (as the
    paper's Fig. 5 plots every timestamp)."""
    grouped = results.groupby(keys, sort=False)
    return pd.DataFrame({
        "releases": grouped["release"].count(),
        "max": grouped["counterfeits"].max(),
        "mean": grouped["counterfeits"].mean().round(2),
        "zero": grouped["counterfeits"].apply(lambda c: int((c == 0).sum())),
        "total": grouped["counterfeits"].sum(),
        "final_signatures": grouped["signatures"].last(),
        "median_wall_s": grouped["wall_s"].median().round(2),
    }).reset_index()


def markdown(frame: pd.DataFrame) -> str:
    columns = list(frame.columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)
