"""Shared parts of the m-Distinct benchmarks (Li & Zhou, §VI).

Three ways to re-publish a series with internal updates, each attacked with the SUG attack
by the adversary who knows every version's QI group (the paper's §I-A and §VI-B setting):

* ``m-distinct``: :func:`republish.solver.m_distinct.publish_m_distinct`;
* ``2-diversity``: every release on its own, Mondrian with l-eligible cuts (the paper's
  §VI-B baseline "l-diversity algorithm in [10]");
* ``m-invariance``: :func:`republish.solver.m_invariance.publish_m_invariant` used as it
  must be when values change: a record whose sensitive value changed is published under a
  fresh internal identifier (m-invariance cannot keep its signature: the paper's
  "invalidate records"), QI changes are accepted; the adversary links versions by identity.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from output_paths import free_paths, redraw_path  # benchmarks/ is the script's folder

from republish.audit.sug import sug_attack_groups
from republish.heuristics.mondrian import mondrian_table
from republish.metrics import query_error
from republish.release import Release, build_release
from republish.schema import Schema
from republish.solver.m_distinct import publish_m_distinct
from republish.solver.m_invariance import publish_m_invariant
from republish.state import PublisherState
from republish.tables import validate_table
from republish.transitions import TransitionModel
from republish.updates import QIUpdate, block_transitions, update_series

HERE = Path(__file__).resolve().parent

#: ``make_series(d)``: the microdata series and the transition model of diameter ``d``.
SeriesFactory = Callable[[int], tuple[list[pd.DataFrame], TransitionModel]]


def vulnerable_over_time(releases: Sequence[Release], model: TransitionModel) -> list[int]:
    """Versions with risk 1 (Lemma 2) after each release, over all versions so far."""
    return [int(sug_attack_groups(releases[:j], model).vulnerable.sum())
            for j in range(1, len(releases) + 1)]


def _record(method: str, number: int, release: Release, table: pd.DataFrame, schema: Schema,
            queries: int, wall: float, **extra: Any) -> dict[str, Any]:
    groups = release.group_count()
    fakes = release.counterfeit_total()
    return {
        "method": method, "release": number, "rows": len(table), "groups": groups,
        "counterfeits": fakes, "cnt_g": fakes / groups if groups else 0.0,
        "query_error": query_error(table, release.published, release.counterfeits, schema,
                                   count=queries, seed=number),
        "wall_time_s": wall, **extra,
    }


def run_m_distinct(series: Sequence[pd.DataFrame], schema: Schema, m: int,
                   model: TransitionModel, seed: int, queries: int, time_limit: float,
                   strict: bool = False) -> tuple[list[Release], list[dict[str, Any]]]:
    state: PublisherState | None = None
    rng = np.random.default_rng(seed)
    releases, records = [], []
    for number, table in enumerate(series, start=1):
        result = publish_m_distinct(table, schema, m, model, state, rng=rng, strict=strict,
                                    time_limit=time_limit, workers=1)
        state = result.state
        releases.append(result.release)
        records.append(_record(
            "m-distinct", number, result.release, table, schema, queries, result.wall_time_s,
            status=result.certificate.status, bound=result.certificate.bound,
            heuristic=result.certificate.heuristic_objective))
        print(f"  m-distinct m={m} release {number}: {result.counterfeits} counterfeits, "
              f"{result.groups} groups, {result.certificate.status}, "
              f"{result.wall_time_s:.1f} s", flush=True)
    return releases, records


def run_l_diversity(series: Sequence[pd.DataFrame], schema: Schema, l: int,  # noqa: E741
                    seed: int, queries: int) -> tuple[list[Release], list[dict[str, Any]]]:
    rng = np.random.default_rng(seed)
    releases, records = [], []
    for number, table in enumerate(series, start=1):
        start = time.perf_counter()
        validated = validate_table(table, schema)
        groups = mondrian_table(validated, schema, l).groups
        release = build_release(number, validated, groups, schema, rng=rng)
        releases.append(release)
        records.append(_record(f"{l}-diversity", number, release, validated, schema, queries,
                               time.perf_counter() - start))
    return releases, records


def run_naive_m_invariance(series: Sequence[pd.DataFrame], schema: Schema, m: int,
                           seed: int, queries: int) -> tuple[list[Release], list[dict[str, Any]]]:
    """See the module docstring; releases come back with the true identifiers."""
    ident, sensitive = schema.identifier, schema.sensitive
    rng = np.random.default_rng(seed)
    state: PublisherState | None = None
    alias: dict[str, str] = {}
    last_value: dict[str, str] = {}
    releases, records = [], []
    for number, table in enumerate(series, start=1):
        table = validate_table(table, schema)
        true_ids = table[ident].tolist()
        changed = 0
        internal = []
        for person, value in zip(true_ids, table[sensitive].tolist(), strict=True):
            if person in last_value and last_value[person] != value:
                alias[person] = f"{person}~{number}"
                changed += 1
            internal.append(alias.get(person, person))
            last_value[person] = value
        table[ident] = internal
        if state is not None and len(state.rows):
            # QI changes do not matter to m-invariance; accept them in the private state.
            rows = state.rows.copy()
            common = table[table[ident].isin(rows.index)]
            rows.loc[common[ident], schema.qi_names] = common[schema.qi_names].to_numpy()
            state = dataclasses.replace(state, rows=rows)
        result = publish_m_invariant(table, schema, m, state, rng=rng, validated=True)
        state = result.state
        back = dict(zip(internal, true_ids, strict=True))
        assignment = result.release.assignment.copy()
        assignment[ident] = assignment[ident].map(back)
        release = dataclasses.replace(result.release, assignment=assignment)
        releases.append(release)
        table[ident] = true_ids
        records.append(_record(f"{m}-invariance", number, release, table, schema, queries,
                               result.wall_time_s, invalid=changed))
    return releases, records


def run_experiment(
    make_series: SeriesFactory, schema: Schema, diameters: Sequence[int], ms: Sequence[int],
    configs: Sequence[tuple[int, int]] | None, seed: int, queries: int, time_limit: float,
) -> pd.DataFrame:
    """Every diameter: the series, the two baselines (l = m = 2), m-Distinct for every m
    (or only the ``(d, m)`` pairs of ``configs``); vulnerable versions after each release.

    ``make_series(d)`` returns the microdata series and the transition model of diameter d.
    """
    rows: list[dict[str, Any]] = []
    for d in diameters:
        series, model = make_series(d)
        print(f"d = {d}: {len(series)} releases, {len(series[-1])} rows in the last", flush=True)
        runs = [("2-diversity", 2, *run_l_diversity(series, schema, 2, seed, queries)),
                ("2-invariance", 2, *run_naive_m_invariance(series, schema, 2, seed, queries))]
        for m in ms:
            if configs is None or (d, m) in configs:
                runs.append(("m-distinct", m, *run_m_distinct(series, schema, m, model, seed,
                                                               queries, time_limit)))
        for method, m, releases, records in runs:
            vulnerable = vulnerable_over_time(releases, model)
            versions = np.cumsum([len(r.assignment) for r in releases])
            for record, count, total in zip(records, vulnerable, versions, strict=True):
                rows.append({**record, "method": method, "d": d, "m": m,
                             "vulnerable": count, "versions": int(total)})
            print(f"  {method} m={m}: vulnerable versions {vulnerable}", flush=True)
    return pd.DataFrame(rows)


def summarize(results: pd.DataFrame) -> str:
    """Markdown tables: per (method, d, m) over the releases."""
    lines = [
        "| method | d | m | releases | counterfeits per group (mean / max) | median query "
        "error | mean wall s | vulnerable versions (last release) | invalid records |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for (method, d, m), part in results.groupby(["method", "d", "m"], sort=False):
        invalid = int(part["invalid"].sum()) if "invalid" in part and part["invalid"].notna(
        ).any() else "-"
        last = part.iloc[-1]
        lines.append(
            f"| {method} | {d} | {m} | {len(part)} | {part['cnt_g'].mean():.3f} / "
            f"{part['cnt_g'].max():.3f} | {part['query_error'].median():.3f} | "
            f"{part['wall_time_s'].mean():.1f} | {int(last['vulnerable'])} of "
            f"{int(last['versions'])} | {invalid} |")
    return "\n".join(lines)


def plot(results: pd.DataFrame, path: Any, title: str, focus_d: int, compare_m: int) -> None:
    """Counterfeits per group, query error, time and vulnerable versions (m-Distinct with
    ``compare_m`` against the baselines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    distinct = results[results["method"] == "m-distinct"]
    figure, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    at_d = distinct[distinct["d"] == focus_d]
    for m, part in at_d.groupby("m"):
        axes[0][0].plot(part["release"], part["cnt_g"], marker=".", label=f"m = {m}")
        axes[0][1].plot(part["release"], part["query_error"], marker=".", label=f"m = {m}")
    axes[0][0].set(title=f"counterfeits per group (d = {focus_d})", xlabel="release")
    axes[0][1].set(title=f"median query error (d = {focus_d})", xlabel="release")
    mean = distinct.groupby(["d", "m"])[["cnt_g", "wall_time_s"]].mean().reset_index()
    for m, part in mean.groupby("m"):
        axes[0][2].plot(part["d"], part["cnt_g"], marker="o", label=f"m = {m}")
        axes[1][0].plot(part["d"], part["wall_time_s"], marker="o", label=f"m = {m}")
    axes[0][2].set(title="mean counterfeits per group vs d", xlabel="diameter d")
    axes[1][0].set(title="mean wall time per release (s) vs d", xlabel="diameter d")
    for method, part in results[results["d"] == focus_d].groupby("method", sort=False):
        if method == "m-distinct":
            part, method = part[part["m"] == compare_m], f"{compare_m}-distinct"
        axes[1][1].plot(part["release"], part["vulnerable"], marker=".", label=method)
    axes[1][1].set(title=f"vulnerable versions (risk 1), d = {focus_d}", xlabel="release")
    last = results.groupby(["method", "d", "m"]).tail(1)
    for method, part in last.groupby("method", sort=False):
        if method == "m-distinct":
            part, method = part[part["m"] == compare_m], f"{compare_m}-distinct"
        axes[1][2].plot(part["d"], part["vulnerable"], marker="o", label=method)
    axes[1][2].set(title="vulnerable versions after the last release vs d",
                   xlabel="diameter d")
    from matplotlib.ticker import MaxNLocator

    for axis in axes.flat:
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def series_parser(description: str, name: str, *, deleted: int) -> argparse.ArgumentParser:
    """The options of both series benchmarks; a script adds its own, then parses.

    Results go to ``benchmarks/<name>_results.csv`` and ``benchmarks/figures/<name>.png``, or,
    when either exists (RESULTS.md cites them), to the first free ``<name>_results_2.csv`` and
    ``<name>_2.png``, ...; ``--csv``/``--figure`` are written exactly where given.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--initial", type=int, default=20_000)
    parser.add_argument("--deleted", type=int, default=deleted)
    parser.add_argument("--inserted", type=int, default=5_000)
    parser.add_argument("--sa-updates", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--from-csv", action="store_true",
                        help="Only redraw the figure and the summary from --csv (default: the "
                        f"committed {name}_results.csv, whose figure is then redrawn in place).")
    parser.add_argument("--csv", type=Path, default=None,
                        help=f"written exactly there (default: {name}_results.csv, or the "
                        f"first free {name}_results_<n>.csv when it exists)")
    parser.add_argument("--figure", type=Path, default=None,
                        help=f"written exactly there (default: figures/{name}.png, or the "
                        f"first free {name}_<n>.png)")
    parser.set_defaults(default_csv=HERE / f"{name}_results.csv",
                        default_figure=HERE / "figures" / f"{name}.png")
    return parser


def series_factory(table: pd.DataFrame, schema: Schema, order: Sequence[str],
                   args: argparse.Namespace, releases: int,
                   qi_updates: Mapping[str, QIUpdate]) -> SeriesFactory:
    """``make_series(d)`` of :func:`run_experiment`: the sizes of :func:`series_parser`'s
    options, sensitive values changing within blocks of diameter ``d`` of ``order``."""

    def make_series(d: int) -> tuple[list[pd.DataFrame], TransitionModel]:
        model = block_transitions(order, d)
        return update_series(table, schema, model, initial=args.initial, deleted=args.deleted,
                             inserted=args.inserted, releases=releases,
                             sa_updates=args.sa_updates, seed=args.seed,
                             qi_updates=qi_updates), model

    return make_series


def run_benchmark(args: argparse.Namespace, title: str, compare_m: int,
                  experiment: Callable[[], pd.DataFrame]) -> None:
    """Run ``experiment`` (or read ``--csv`` with ``--from-csv``), write the results and
    the figure, print the date, the total time and the Markdown summary."""
    start = time.perf_counter()
    if args.from_csv:
        source = args.csv or args.default_csv
        figure = redraw_path(args.figure, args.default_figure, data=source,
                             committed=args.default_csv)
        results = pd.read_csv(source)
        plot(results, figure, title, focus_d=5, compare_m=compare_m)
        print(f"figure written to {figure}", file=sys.stderr)
        print(summarize(results))
        return
    free_csv, free_figure = free_paths(args.default_csv, args.default_figure)
    out, figure = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure}", file=sys.stderr)
    results = experiment()
    results.to_csv(out, index=False)
    figure.parent.mkdir(parents=True, exist_ok=True)
    plot(results, figure, title, focus_d=5, compare_m=compare_m)
    print()
    print(f"Date {date.today()}, total {time.perf_counter() - start:.0f} s")
    print(summarize(results))
