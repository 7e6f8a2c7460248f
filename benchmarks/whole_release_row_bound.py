"""The row/capacity bound on objective (b) (:mod:`republish.models.whole_release_row_bound`)
on the Adult series of ``benchmarks/whole_release_adult.py``, against the best known (b)
and the cycle-cover bound.

The series is built as there (UCI Adult, sensitive ``occupation``, QIs ``age, sex,
education, native-country``, ``--initial`` rows, ``--r`` changes per release); each
release is published with ``mode="exact"`` and ``--time-limit`` seconds, and the problem,
extent and answer of the whole-release model are captured on the way (the model is
wrapped, not changed). Per release it prints the row bound (wall and CPU seconds), the
cycle-cover bound (skipped above ``CYCLE_COVER_ROWS``, as the model does), the model's
(b), and, for first releases, the (b) of a simple sort-and-group greedy (``--greedy``).

Usage::

    python benchmarks/whole_release_row_bound.py --initial 20000 --r 2000 --releases 2 \\
        --m 3 4 5 7 --time-limit 10 --greedy
    python benchmarks/whole_release_row_bound.py --initial 200 --r 20 --releases 1 \\
        --m 3 4 --time-limit 1 10
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from typing import Any

import numpy as np

import republish.solver.m_invariance_whole as whole
from republish.datasets import dynamic_series, load_adult
from republish.models.whole_release import CYCLE_COVER_ROWS
from republish.models.whole_release_bound import cycle_cover_bound
from republish.models.whole_release_problem import WholeReleaseProblem, release_problems
from republish.models.whole_release_row_bound import row_bound
from republish.solver.m_invariance import publish_m_invariant

QIS = ["age", "sex", "education", "native-country"]


def greedy(problem: WholeReleaseProblem, extent: Any) -> float | None:
    """(b) of a valid first release: rows sorted by (hierarchy cells, age), grouped by the
    first ``m`` distinct values while the cells coarsen; the rest join the group whose
    cost grows least. None when the problem has old rows or is not Adult-shaped."""
    cost = getattr(extent, "cost", None)
    if (problem.bucket >= 0).any() or cost is None or len(cost.schema.qis) != 4:
        return None
    points, m, free, groups = cost.points, problem.m, np.ones(len(problem.values), bool), []
    ids = [qi.hierarchy.node_ids for qi in cost.schema.qis[1:]]
    for levels in [(0, 0, 0), (0, 1, 0), (0, 1, 1), (0, 2, 1), (0, 3, 2), (1, 3, 2)]:
        key = np.zeros(len(points), np.int64)
        for q, (nodes, level) in enumerate(zip(ids, levels, strict=True)):
            key = key * 1000 + nodes[min(level, len(nodes) - 1), points[:, q + 1].astype(int)]
        rows = np.flatnonzero(free)
        current, pending = None, []
        for i in rows[np.lexsort((points[rows, 0], key[rows]))].tolist():
            if key[i] != current:
                current, pending = key[i], []
            pending.append(i)
            first: dict[int, int] = {}
            for j in pending:
                first.setdefault(int(problem.values[j]), j)
            if len(first) >= m:
                group = [first[v] for v in list(first)[:m]]
                groups.append(group)
                free[group] = False
                pending = [j for j in pending if free[j]]
    groups = [np.array(g) for g in groups]
    low = np.array([points[g].min(axis=0) for g in groups])
    high = np.array([points[g].max(axis=0) for g in groups])
    sizes = np.array([len(g) for g in groups])
    spread = cost.batch(np.array(groups))
    has = np.zeros((len(groups), problem.domain_size), bool)
    for c, g in enumerate(groups):
        has[c, problem.values[g]] = True
    for i in np.flatnonzero(free).tolist():  # the group whose cost grows least
        grown_low, grown_high = np.minimum(low, points[i]), np.maximum(high, points[i])
        grown = cost._lengths(grown_low, grown_high).sum(axis=1)
        rise = np.where(has[:, problem.values[i]], np.inf,
                        (sizes + 1) * grown - sizes * spread)
        c = int(np.argmin(rise))
        groups[c] = np.append(groups[c], i)
        low[c], high[c], spread[c] = grown_low[c], grown_high[c], grown[c]
        sizes[c] += 1
        has[c, problem.values[i]] = True
    if release_problems(problem, groups, np.zeros(0, np.int64)):
        return None
    return float(sum(len(g) * extent(g) for g in groups))


def run(initial: int, r: int, releases: int, ms: list[int], limits: list[float],
        use_greedy: bool) -> list[dict[str, Any]]:
    table, schema = load_adult(sensitive="occupation", qis=QIS)
    series = dynamic_series(table, initial, r, releases, 1)
    captured: list[tuple[Any, ...]] = []
    original = whole.solve_whole_release

    def spy(problem: WholeReleaseProblem, **options: Any) -> Any:
        solution = original(problem, **options)
        captured.append((problem, options.get("extent"), solution))
        return solution

    whole.solve_whole_release = spy  # type: ignore[assignment]
    records = []
    try:
        for m in ms:
            for limit in limits:
                state = None
                for release, microdata in enumerate(series, start=1):
                    captured.clear()
                    step = publish_m_invariant(microdata, schema, m, state, mode="exact",
                                               time_limit=limit,
                                               rng=np.random.default_rng(1))
                    state = step.state
                    if not captured:  # no time left for the model in this step
                        print(f"m={m} release {release}: model not run", file=sys.stderr)
                        continue
                    problem, extent, solution = captured[-1]
                    a_star = Fraction(solution.objective_a).limit_denominator(10**6)
                    found = row_bound(problem, extent, a_star)
                    started, cpu = time.perf_counter(), time.process_time()
                    cycle = None
                    if len(problem.values) <= CYCLE_COVER_ROWS:
                        cycle = cycle_cover_bound(problem, extent, float(a_star),
                                                  Fraction(problem.deferral_weight),
                                                  deadline=started + 60)
                    records.append({
                        "m": m, "limit": limit, "release": release,
                        "rows": len(problem.values), "a": float(a_star),
                        "status_a": solution.status_a, "b": solution.objective_b,
                        "model_bound": solution.bound_b,
                        "greedy": greedy(problem, extent) if use_greedy else None,
                        "row": found.bound, "by_rows": found.by_rows,
                        "by_capacity": found.by_capacity, "row_wall": found.wall_time_s,
                        "row_cpu": found.cpu_time_s, "cycle": cycle,
                        "cycle_wall": time.perf_counter() - started,
                        "cycle_cpu": time.process_time() - cpu})
                    print(records[-1], file=sys.stderr, flush=True)
    finally:
        whole.solve_whole_release = original  # type: ignore[assignment]
    return records


def markdown(records: list[dict[str, Any]]) -> str:
    lines = ["| m | limit s | release | rows | (a) | model (b) | greedy (b) | row bound "
             "(rows / capacity) | gap to best known | row bound wall / CPU s | cycle-cover bound | "
             "model's bound |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for x in records:
        best = min(v for v in (x["b"], x["greedy"]) if v is not None)
        cycle = "skipped" if x["cycle"] is None else f"{x['cycle']:.1f}"
        greedy_b = "-" if x["greedy"] is None else f"{x['greedy']:.1f}"
        lines.append(
            f"| {x['m']} | {x['limit']:g} | {x['release']} | {x['rows']} | {x['a']:g} | "
            f"{x['b']:.1f} | {greedy_b} | {x['row']:.1f} ({x['by_rows']:.1f} / "
            f"{x['by_capacity']:.1f}) | {100 * (1 - x['row'] / best):.1f} % | "
            f"{x['row_wall']:.2f} / {x['row_cpu']:.2f} | {cycle} | {x['model_bound']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", type=int, default=20_000)
    parser.add_argument("--r", type=int, default=2_000)
    parser.add_argument("--releases", type=int, default=2)
    parser.add_argument("--m", type=int, nargs="+", default=[3, 4, 5, 7])
    parser.add_argument("--time-limit", type=float, nargs="+", default=[10.0])
    parser.add_argument("--greedy", action="store_true",
                        help="also the sort-and-group greedy on first releases")
    args = parser.parse_args()
    records = run(args.initial, args.r, args.releases, args.m, args.time_limit, args.greedy)
    print(f"`python benchmarks/whole_release_row_bound.py {' '.join(sys.argv[1:])}`\n")
    print(markdown(records))


if __name__ == "__main__":
    main()
