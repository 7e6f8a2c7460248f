"""Fig. 7 of the m-eligibility paper (§IV-C) and the Cach baseline on the same series.

Dynamic series cut from Adult (SA ``occupation``): a first release of ``--initial`` rows,
then ``--deletions`` random deletions and ``--insertions`` insertions per release,
``--releases`` releases (:func:`republish.heuristics.tau_safety_dynamic.growing_series`),
``--runs`` series seeds (the paper averages 5 runs). Every release is an m-invariant
release computed on counts (:mod:`republish.heuristics.count_series`), with the
eligibility step of each policy:

* ``project``: Algorithm 1 with the pipeline's frequent-value placement of counterfeits
  (:func:`republish.solver.frequent_counterfeits.prefer_frequent_solution`), what
  ``republish release --eligibility counterfeit`` does;
* ``algorithm 1``: the paper's Algorithm 1 (counterfeits on the least frequent values);
* ``tau-safety random``: the baseline of Anjum et al. (random counterfeits);
* ``cach``: Khan et al.'s partial publication (one held-back tuple per value), then
  Algorithm 1 for what it cannot fix (:mod:`republish.heuristics.cach`);
* ``algorithm 2 (deferrals)`` and ``algorithm 3 (hybrid)``: the project's deferrals.

``--check`` also runs the real heuristic pipeline
(:func:`republish.solver.m_invariance.publish_m_invariant`, ``mode="heuristic"``) on the
first series and prints its counterfeits beside the count simulation's (``project``).

    nice -n 10 .venv/bin/python benchmarks/tau_safety_series.py --check
    nice -n 10 .venv/bin/python benchmarks/tau_safety_series.py --initial 20000 \
        --deletions 2000 --insertions 4000 --tag paper

Adult (ARX edition) has 30,162 rows; the paper's protocol needs 44,000 distinct rows, so
the default is that protocol scaled by 0.685 (13,700 / 1,370 / 2,740: every insertion a
fresh row) and ``--tag paper`` runs it at full size with re-insertions of deleted rows
once the fresh rows run out. Writes ``benchmarks/tau_safety_series_<tag>.csv`` and
``benchmarks/figures/tau_safety_series_<tag>.png`` (or, when either exists -- RESULTS.md
cites them -- the first free ``..._<tag>_2.csv`` and ``..._<tag>_2.png``, ... beside them;
``--csv``/``--figure`` write exactly there); prints Markdown for RESULTS.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from batch_throughput import markdown  # noqa: E402  (benchmarks/ is the script's folder)
from output_paths import free_paths  # noqa: E402

from republish.datasets import load_adult  # noqa: E402
from republish.heuristics.cach import CachPolicy  # noqa: E402
from republish.heuristics.count_series import (  # noqa: E402
    CountPolicy,
    EligibilityPolicy,
    run_count_series,
)
from republish.heuristics.eligibility import minimal_superset  # noqa: E402
from republish.heuristics.tau_safety_dynamic import (  # noqa: E402
    ALGORITHM_1,
    ALGORITHM_2,
    ALGORITHM_3,
    TAU_SAFETY,
    growing_series,
)
from republish.problems.eligibility import EligibilitySolution  # noqa: E402
from republish.solver.frequent_counterfeits import prefer_frequent_solution  # noqa: E402

HERE = Path(__file__).resolve().parent
QIS = ["age", "sex", "education", "native-country"]


def _project_rule(counts: dict[str, int], m: int, domain: Sequence[str],
                  rng: np.random.Generator) -> EligibilitySolution:
    absent = [v for v in domain if counts.get(v, 0) == 0]
    solution = minimal_superset(counts, m, allow_new_values=True, new_values=absent)
    return prefer_frequent_solution(solution, domain, absent)


def policies() -> list[EligibilityPolicy]:
    return [CountPolicy("project", _project_rule), ALGORITHM_1, TAU_SAFETY, CachPolicy(),
            ALGORITHM_2, ALGORITHM_3]


def run(args: argparse.Namespace) -> pd.DataFrame:
    table, _ = load_adult(sensitive="occupation", qis=QIS)
    frames = []
    for run_seed in range(args.runs):
        series = growing_series(table, args.initial, args.deletions, args.insertions,
                                args.releases, seed=run_seed)
        releases = [pd.Series(t["occupation"].to_numpy(), index=t["id"].to_numpy())
                    for t in series]
        for m in args.m:
            for policy in policies():
                frame = run_count_series(releases, m, policy, seed=run_seed).frame()
                frame["run"] = run_seed
                frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def check(args: argparse.Namespace) -> None:
    """The real heuristic pipeline against the count simulation (first series, m = 7)."""
    from republish.solver.m_invariance import publish_m_invariant

    table, schema = load_adult(sensitive="occupation", qis=QIS)
    series = growing_series(table, args.initial, args.deletions, args.insertions,
                            args.releases, seed=0)
    releases = [pd.Series(t["occupation"].to_numpy(), index=t["id"].to_numpy())
                for t in series]
    for m in args.m:
        counted = run_count_series(releases, m, CountPolicy("project", _project_rule), 0)
        state, real = None, []
        for number, microdata in enumerate(series, start=1):
            result = publish_m_invariant(microdata.reset_index(drop=True), schema, m, state,
                                         eligibility="counterfeit", mode="heuristic",
                                         rng=np.random.default_rng(number), validated=True)
            state = result.state
            real.append(result.counterfeits)
        print(f"check m={m}: pipeline {real} (total {sum(real)}), count simulation "
              f"{[s.counterfeits for s in counted.steps]} "
              f"(total {sum(s.counterfeits for s in counted.steps)})", flush=True)


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """Means per release over runs. ``added``: balancing + eligibility counterfeits (what
    the paper counts); ``published``: after counterfeit-only groups are dropped."""
    results = results.assign(added=results["balancing_counterfeits"]
                             + results["eligibility_counterfeits"])
    per_release = results.groupby(["m", "policy", "release"], sort=False).mean(
        numeric_only=True).reset_index()
    rows = []
    for (m, policy), part in per_release.groupby(["m", "policy"], sort=False):
        rows.append({"m": m, "policy": policy,
                     "added / release": part["added"].mean(),
                     "published / release": part["counterfeits"].mean(),
                     "deferred / release": part["deferred"].mean(),
                     "published + deferred": part["modifications"].mean(),
                     "added per release": " ".join(f"{v:.0f}" for v in part["added"])})
    frame = pd.DataFrame(rows)
    for m in frame["m"].unique():
        mine = frame["m"] == m
        base = frame[mine & (frame["policy"] == "tau-safety random")].iloc[0]
        frame.loc[mine, "added vs random"] = frame.loc[mine, "added / release"].map(
            lambda v, b=base["added / release"]: f"{100 * (v / b - 1):+.0f} %")
        frame.loc[mine, "(pub.+def.) vs random"] = frame.loc[
            mine, "published + deferred"].map(
            lambda v, b=base["published + deferred"]: f"{100 * (v / b - 1):+.0f} %")
    return frame


def figure(results: pd.DataFrame, path: Path, title: str) -> None:
    """Top: counterfeits added + deferrals (the paper's count); bottom: counterfeits
    published (counterfeit-only groups dropped) + deferrals."""
    results = results.assign(
        added=results["balancing_counterfeits"] + results["eligibility_counterfeits"]
        + results["deferred"])
    per_release = results.groupby(["m", "policy", "release"], sort=False).mean(
        numeric_only=True).reset_index()
    ms = sorted(per_release["m"].unique())
    fig, axes = plt.subplots(2, len(ms), figsize=(5.5 * len(ms), 7.5), squeeze=False)
    for row, (column, label) in enumerate((("added", "counterfeits added + deferrals"),
                                           ("modifications",
                                            "counterfeits published + deferrals"))):
        for axis, m in zip(axes[row], ms, strict=True):
            for policy, part in per_release[per_release["m"] == m].groupby("policy",
                                                                            sort=False):
                style = "--" if policy in ("cach", "tau-safety random") else "-"
                axis.plot(part["release"], part[column], style, marker="o", label=policy)
            axis.set_title(f"occupation, m = {m}")
            axis.set_xlabel("release")
            axis.set_ylabel(f"{label} (mean of runs)", fontsize=8)
            axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--initial", type=int, default=13_700)
    parser.add_argument("--deletions", type=int, default=1_370)
    parser.add_argument("--insertions", type=int, default=2_740)
    parser.add_argument("--releases", type=int, default=7)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--m", type=int, nargs="+", default=[7, 8])
    parser.add_argument("--tag", default="scaled")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--csv", type=Path, default=None,
                        help="written exactly there (default: tau_safety_series_<tag>.csv, or "
                        "the first free tau_safety_series_<tag>_<n>.csv when it exists)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="written exactly there (default: figures/tau_safety_series_<tag>"
                        ".png, or the first free tau_safety_series_<tag>_<n>.png)")
    args = parser.parse_args()
    free_csv, free_figure = free_paths(HERE / f"tau_safety_series_{args.tag}.csv",
                                       HERE / "figures" / f"tau_safety_series_{args.tag}.png")
    out, figure_path = args.csv or free_csv, args.figure or free_figure
    print(f"writing {out} and {figure_path}", file=sys.stderr)
    start = time.perf_counter()
    results = run(args)
    results.to_csv(out, index=False)
    figure(results, figure_path,
           f"Adult occupation: {args.initial} rows, -{args.deletions}/+{args.insertions}, "
           f"{args.releases} releases, {args.runs} runs")
    print(markdown(summary(results), digits=4))
    print(f"time {time.perf_counter() - start:.1f} s")
    if args.check:
        check(args)


if __name__ == "__main__":
    main()
