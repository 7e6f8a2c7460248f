"""ε-inclusion vs m-invariance: query error and cost per release (ε-inclusion paper, Figs. 1-3).

The same dynamic series is published twice per ``ε = m``: ε-inclusively
(``publish_eps_inclusive``: exact QIs, permuted sensitive values, substitutions; λ = ε,
τ = 1 with every sensitive value its own category, so each group needs ε distinct values
as m-uniqueness does) and m-invariantly (``publish_m_invariant``: generalization and
counterfeits, eligibility by counterfeits). Both steps include their verification.

Series: the ones of the m-invariance benchmarks (m-invariance paper §5 protocol: ``T(1)``
a random sample, then ``r`` deletions and ``r`` insertions from the pool per release):

* census: ``synthetic_census(600_000, seed=1)`` (domains of Table 5, SA occupation, 50
  values), ``T(1)`` = 200k rows, ``r`` = 5k (the paper's Fig. 2 setting),
  ``dynamic_series(seed=5001)`` as ``benchmarks/m_invariance_synthetic.py``; the first
  ``--releases`` releases (5 by default; the paper's series has 81);
* adult: ARX Adult, SA occupation (14 values), QIs age, sex, education, native-country,
  ``T(1)`` = 20k rows, ``r`` = 2k, all 6 releases, ``dynamic_series(seed=1)`` as
  ``benchmarks/m_invariance_adult.py``.

Utility: the paper's workload (``COUNT(*)`` with a range on every QI and on the SA, each
of length ``|A|·s^(1/(d+1))``, ``s`` = 10%), ``--queries`` queries per release drawn on
``T(j)``; relative error ``|act − est| / act`` (queries with ``act = 0`` skipped), the
paper's *average* and also the median. Estimates: ``estimate_from_release`` (uniform in
the box, counterfeits discounted) for m-invariance, ``estimate_from_permuted`` (exact QIs,
the group's value shares) for ε-inclusion. Cost: wall and CPU time of the whole step,
verification included (the machine is shared: CPU time is the fair measure).

    /tmp/venv/bin/python benchmarks/eps_inclusion_vs_m_invariance.py --dataset census
    /tmp/venv/bin/python benchmarks/eps_inclusion_vs_m_invariance.py --dataset adult
    /tmp/venv/bin/python benchmarks/eps_inclusion_vs_m_invariance.py --dataset census \
        --epsilons 10 --releases 30 --csv benchmarks/eps_inclusion_results_long.csv
    /tmp/venv/bin/python benchmarks/eps_inclusion_vs_m_invariance.py --attack

write ``benchmarks/eps_inclusion_results_<dataset>.csv`` (and ``_long``) and the PNGs
``benchmarks/figures/eps_inclusion_{error,time,error_vs_release}.png``, drawn from the
census, adult and long CSVs. RESULTS.md cites these files, so without ``--csv`` a run whose
CSV exists writes the first free ``eps_inclusion_results_<dataset>_2.csv``, ... instead,
draws it in place of the committed one and writes the PNGs to the first free
``eps_inclusion_*_<n>.png``; ``--csv`` writes exactly there (and the PNGs are redrawn from
the committed CSVs, as ``--plot-only`` does, replacing them on purpose).

``--attack`` instead audits ε-inclusive series (census scaled to ``--attack-initial`` =
20k rows, ``r`` = 2.5%, 5 releases; the Adult series above; with the paper's Algorithm 1
-- extras, former substitutes published truthfully -- and with the product's default --
neither): the
intersection attack of ``republish.audit`` (candidate sets of one tuple) and a
*difference attack* using the exact QIs: a group of ``T*(j)`` containing every member of
groups of ``T*(j-1)`` (no substitution in either) leaves the multiset difference to its
other members. Writes ``benchmarks/eps_inclusion_attack.csv`` (or the first free
``eps_inclusion_attack_2.csv``, ... when it exists; ``--csv`` writes exactly there).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from output_paths import free_paths, results_path  # benchmarks/ is the script's folder

from republish.audit.intersection import intersection_attack
from republish.audit.knowledge import knowledge_from_releases
from republish.datasets import census_schema, dynamic_series, load_adult, synthetic_census
from republish.generalization import Domain
from republish.metrics import (
    answer_exact,
    estimate_from_permuted,
    estimate_from_release,
    generate_queries,
    relative_errors,
)
from republish.release import GROUP, Release
from republish.schema import Schema
from republish.solver.eps_inclusion import publish_eps_inclusive
from republish.solver.m_invariance import publish_m_invariant
from republish.tables import encode_qis

HERE = Path(__file__).resolve().parent
ATTACK = HERE / "eps_inclusion_attack.csv"
CENSUS_R = 5_000
ADULT_QIS = ["age", "sex", "education", "native-country"]
ADULT_INITIAL, ADULT_R = 20_000, 2_000
FIGURES = HERE / "figures"
#: The committed CSVs the figures are drawn from.
RESULTS = {"census": HERE / "eps_inclusion_results_census.csv",
           "adult": HERE / "eps_inclusion_results_adult.csv",
           "long": HERE / "eps_inclusion_results_long.csv"}
FIGURE_PATHS = {name: FIGURES / f"eps_inclusion_{name}.png"
                for name in ("error", "time", "error_vs_release")}


def run_series(
    name: str, series: list[pd.DataFrame], schema: Schema, epsilons: list[int], queries: int,
    seed: int, target: Path,
) -> list[dict[str, object]]:
    values = sorted(set().union(*(set(t[schema.sensitive].astype(str)) for t in series)))
    workloads = []
    for j, table in enumerate(series):
        workload = generate_queries(schema, table, queries, 0.1, seed=1000 + j,
                                    sensitive_values=values)
        domain = Domain.of(schema, encode_qis(table, schema))
        workloads.append((workload, domain, answer_exact(table, schema, workload)))
    rows: list[dict[str, object]] = []
    for epsilon in epsilons:
        for method in ("eps-inclusion", "m-invariance"):
            rng = np.random.default_rng(seed + epsilon)
            state = None
            for j, table in enumerate(series):
                start, cpu = time.perf_counter(), time.process_time()
                if method == "eps-inclusion":
                    step = publish_eps_inclusive(table, schema, epsilon, 1, previous=state,
                                                 rng=rng, validated=True, time_limit=10.0)
                    fake = step.extra["substitutions"]
                else:
                    step = publish_m_invariant(  # type: ignore[assignment]
                        table, schema, epsilon, previous=state, rng=rng, validated=True)
                    fake = step.counterfeits  # type: ignore[attr-defined]
                seconds = time.perf_counter() - start
                cpu = time.process_time() - cpu
                state = step.state
                workload, domain, actual = workloads[j]
                release = step.release
                if method == "eps-inclusion":
                    estimate = estimate_from_permuted(release.published, schema, workload, domain)
                else:
                    estimate = estimate_from_release(release.published, release.counterfeits,
                                                     schema, workload, domain)
                errors = relative_errors(actual, estimate)
                times = step.certificate.times
                rows.append({
                    "dataset": name, "method": method, "epsilon": epsilon, "release": j + 1,
                    "rows": len(table), "time_s": seconds, "cpu_s": cpu,
                    "verify_s": float(times.get("verify", 0.0)),
                    "assignment_s": float(times.get("assignment", times.get("assign", 0.0))),
                    "mean_error": float(errors.mean()) if len(errors) else float("nan"),
                    "median_error": float(np.median(errors)) if len(errors) else float("nan"),
                    "queries_used": len(errors), "fake_or_substituted": int(fake),
                    "deferred": int(step.deferred), "groups": int(release.group_count()),
                    "status": step.certificate.status,
                })
                pd.DataFrame(rows).to_csv(target, index=False)
                print(f"{name} {method} ε={epsilon} release {j + 1}: {seconds:.1f} s "
                      f"({cpu:.1f} s CPU), mean "
                      f"error {rows[-1]['mean_error']:.4f}, substituted/counterfeit {fake}, "
                      f"deferred {step.deferred}, {step.certificate.status}", flush=True)
    return rows


def _by_group(frame: pd.DataFrame, column: str) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for group, value in zip(frame[GROUP].tolist(), frame[column].astype(str), strict=True):
        out.setdefault(group, []).append(value)
    return out


def difference_attack(previous: Release, current: Release) -> dict[str, int]:
    """Candidate-set size per member of ``current`` left by the difference attack
    (members it does not reach are omitted); see the module docstring."""
    schema = current.schema
    ident = schema.identifier
    members_before = _by_group(previous.assignment, ident)
    members_now = _by_group(current.assignment, ident)
    shown_before = _by_group(previous.published, schema.sensitive)
    shown_now = _by_group(current.published, schema.sensitive)
    host_of = {p: g for g, people in members_now.items() for p in people}
    substituted_before = set(previous.counterfeits[GROUP].tolist())
    substituted_now = set(current.counterfeits[GROUP].tolist())
    contained: dict[int, list[int]] = {}
    for group, people in members_before.items():
        hosts = {host_of.get(p) for p in people}
        if group in substituted_before or len(hosts) != 1 or None in hosts:
            continue
        host = hosts.pop()
        if host is not None and host not in substituted_now:
            contained.setdefault(host, []).append(group)
    sizes: dict[str, int] = {}
    for host, groups in contained.items():
        rest = Counter(shown_now[host])
        known: set[str] = set()
        for group in groups:
            rest -= Counter(shown_before[group])
            known.update(members_before[group])
        for person in members_now[host]:
            if person not in known:
                sizes[person] = len(rest)
    return sizes


def attack(dataset: str, table: pd.DataFrame, initial: int, r: int, releases: int,
           epsilons: list[int], seed: int) -> list[dict[str, object]]:
    schema = census_schema() if dataset == "census" else load_adult(
        sensitive="occupation", qis=ADULT_QIS)[1]
    series = dynamic_series(table, initial, r, releases, seed=seed)
    rows: list[dict[str, object]] = []
    for epsilon in epsilons:
        for extras in (True, False):  # the paper's Algorithm 1, or the product's default
            rng = np.random.default_rng(seed + epsilon)
            state, published = None, []
            extra_rows = 0
            for microdata in series:
                step = publish_eps_inclusive(microdata, schema, epsilon, 1, previous=state,
                                             rng=rng, validated=True, allow_extras=extras,
                                             keep_substitutes=not extras)
                state = step.state
                extra_rows += step.extra["extras"]
                published.append(step.release)
            knowledge = knowledge_from_releases(published)
            audit = intersection_attack(published, knowledge)
            exposed: dict[str, int] = {}
            for before, after in zip(published, published[1:], strict=False):
                for person, size in difference_attack(before, after).items():
                    exposed[person] = min(size, exposed.get(person, size))
            small = [p for p, size in exposed.items() if size < epsilon]
            rows.append({
                "dataset": dataset, "epsilon": epsilon,
                "variant": "paper" if extras else "product",
                "individuals": len(knowledge.table),
                "extra_rows": extra_rows, "substitutions": sum(
                    int(release.counterfeits["count"].sum()) for release in published),
                "deferred_last": len(published[-1].deferred),
                "min_intersection": int(audit.sizes.min()),
                "intersection_vulnerable": int(audit.vulnerable.sum()),
                "difference_reached": len(exposed),
                "difference_below_eps": len(small),
                "difference_disclosed": sum(1 for p in small if exposed[p] == 1),
            })
            print(rows[-1], flush=True)
    return rows


def plot(results: pd.DataFrame, long: pd.DataFrame | None = None,
         paths_of: dict[str, Path] | None = None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths_of = paths_of or FIGURE_PATHS
    FIGURES.mkdir(exist_ok=True)
    datasets = list(dict.fromkeys(results["dataset"]))
    styles = {"eps-inclusion": ("tab:blue", "o"), "m-invariance": ("tab:red", "s")}
    paths = []
    for column, label, name in (("mean_error", "average relative error", "error"),
                                ("cpu_s", "time per release (s)", "time")):
        figure, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 4),
                                    squeeze=False)
        for axis, dataset in zip(axes[0], datasets, strict=True):
            part = results[results["dataset"] == dataset]
            for method, (color, marker) in styles.items():
                mean = part[part["method"] == method].groupby("epsilon")[column].mean()
                axis.plot(mean.index, mean.to_numpy(), color=color, marker=marker,
                          label=f"{method}, CPU time" if column == "cpu_s" else method)
                if column == "cpu_s":
                    wall = part[part["method"] == method].groupby("epsilon")["time_s"].mean()
                    axis.plot(wall.index, wall.to_numpy(), color=color, linestyle="--",
                              marker=marker, alpha=0.5, label=f"{method}, wall time")
            axis.set_title(dataset)
            axis.set_xlabel("ε = m")
            axis.set_ylabel(label)
            axis.grid(alpha=0.3)
            axis.legend(fontsize=8)
        figure.tight_layout()
        path = paths_of[name]
        figure.savefig(path, dpi=120)
        plt.close(figure)
        paths.append(path)
    over_time = long if long is not None else results[
        results["epsilon"] == results["epsilon"].max()]
    datasets = list(dict.fromkeys(over_time["dataset"]))
    figure, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4), squeeze=False)
    for axis, dataset in zip(axes[0], datasets, strict=True):
        part = over_time[over_time["dataset"] == dataset]
        top = int(part["epsilon"].max())
        part = part[part["epsilon"] == top]
        twin = axis.twinx()
        for method, (color, marker) in styles.items():
            mine = part[part["method"] == method]
            axis.plot(mine["release"], mine["mean_error"], color=color, marker=marker,
                      markersize=3, label=f"{method}, error")
            twin.plot(mine["release"], mine["fake_or_substituted"], color=color,
                      linestyle=":", alpha=0.6,
                      label="substitutions" if method == "eps-inclusion" else "counterfeits")
        axis.set_title(f"{dataset}, ε = m = {top}")
        axis.set_xlabel("release")
        axis.set_ylabel("average relative error")
        twin.set_ylabel("substitutions / counterfeits (dotted)")
        axis.grid(alpha=0.3)
        lines = axis.get_legend_handles_labels()
        more = twin.get_legend_handles_labels()
        axis.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8)
    figure.tight_layout()
    path = paths_of["error_vs_release"]
    figure.savefig(path, dpi=120)
    plt.close(figure)
    paths.append(path)
    return paths


def make_series(dataset: str, releases: int | None) -> tuple[list[pd.DataFrame], Schema]:
    """The series of the m-invariance benchmarks (same tables, sizes and seeds)."""
    if dataset == "census":  # benchmarks/m_invariance_synthetic.py, r = 5k
        table, schema = synthetic_census(600_000, seed=1)
        count = min(releases or 81, 81)
        return dynamic_series(table, 200_000, CENSUS_R, count, seed=1 + CENSUS_R), schema
    # benchmarks/m_invariance_adult.py
    table, schema = load_adult(sensitive="occupation", qis=ADULT_QIS)
    count = 1 + (len(table) - ADULT_INITIAL) // ADULT_R
    count = min(releases or count, count)
    return dynamic_series(table, ADULT_INITIAL, ADULT_R, count, seed=1), schema


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=["census", "adult"], default="census")
    parser.add_argument("--releases", type=int, default=None,
                        help="first releases of the series (census default 5, adult all 6)")
    parser.add_argument("--epsilons", type=int, nargs="+", default=list(range(2, 11)))
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there (default: eps_inclusion_results_<dataset>"
                        ".csv, eps_inclusion_attack.csv with --attack, or the first free "
                        "..._<n>.csv when it exists)")
    parser.add_argument("--plot-only", action="store_true")
    parser.add_argument("--attack", action="store_true")
    parser.add_argument("--attack-initial", type=int, default=20_000)
    args = parser.parse_args()
    if args.attack:
        found = []
        for dataset in ("census", "adult"):
            if dataset == "census":
                initial = args.attack_initial
                table, _ = synthetic_census(initial + (initial // 40) * 5, seed=1)
            else:
                initial = ADULT_INITIAL
                table, _ = load_adult(sensitive="occupation", qis=ADULT_QIS)
            found += attack(dataset, table, initial, initial // 40 if dataset == "census"
                            else ADULT_R, 5 if dataset == "census" else 6, args.epsilons,
                            seed=1)
        out = results_path(args.csv, ATTACK)
        pd.DataFrame(found).to_csv(out, index=False)
        print(f"rows written to {out}", file=sys.stderr)
        print(pd.DataFrame(found).to_string(index=False))
        return
    drawn = dict(RESULTS)
    if not args.plot_only:
        releases = args.releases or (5 if args.dataset == "census" else None)
        series, schema = make_series(args.dataset, releases)
        target = results_path(args.csv, RESULTS[args.dataset])
        print(f"writing {target}", file=sys.stderr)
        rows = run_series(args.dataset, series, schema, args.epsilons, args.queries, args.seed,
                          target)
        pd.DataFrame(rows).to_csv(target, index=False)
        if args.csv is None:
            drawn[args.dataset] = target  # this run's rows, wherever they went
    frames = [pd.read_csv(drawn[name]) for name in ("census", "adult") if drawn[name].exists()]
    results = pd.concat(frames, ignore_index=True)
    long = drawn["long"]
    # Drawn from the committed CSVs (--plot-only, --csv): the cited PNGs are regenerated
    # on purpose; drawn with a default run's new rows: new PNGs beside the cited ones.
    fresh = not args.plot_only and args.csv is None
    figures = dict(zip(FIGURE_PATHS, free_paths(*FIGURE_PATHS.values()), strict=True)
                   ) if fresh else FIGURE_PATHS
    for path in plot(results, pd.read_csv(long) if long.exists() else None, figures):
        print(f"wrote {path}")
    summary = results.groupby(["dataset", "method", "epsilon"]).agg(
        mean_error=("mean_error", "mean"), median_error=("median_error", "mean"),
        time_s=("time_s", "mean"), cpu_s=("cpu_s", "mean"), verify_s=("verify_s", "mean"),
        fake=("fake_or_substituted", "sum"), deferred=("deferred", "sum"))
    print(summary.round(4).to_string())


if __name__ == "__main__":
    main()
