"""How far the pair bound on (b) is from the optimum of one bucket's split, at m = 3.

A bucket of a large release at m = 3 splits into groups of one row of each of its three
sensitive values: a three-index (axial) assignment, whose group cost is
``3·Σ_q max(d_q(u, v), d_q(u, w), d_q(v, w))`` (a line's interval and a hierarchy's lowest
common cell are their largest pair's). The pair bound of
:mod:`republish.models.whole_release_pair_bound` relaxes it into three independent
two-index assignments. This experiment takes the largest buckets of a release of the
issue's Adult series (SA occupation; QIs age, sex, education, native-country; 20,000 rows,
r = 2,000), samples ``--sample`` old rows of each value (a balanced instance: every row in
exactly one group), and computes on it:

- the pair bound with the uniform weights (two-index transportation problems);
- a primal: the rows of the first two values matched by their pair cost, the third value's
  rows then assigned to those pairs by a transportation problem;
- the linear relaxation of the three-index assignment by column generation (GLOP; each
  round prices every triple of distinct points exactly, the bound of a round is the LP
  value plus each first-value point's least reduced cost times its rows);
- SCIP over the generated triples: a feasible release of the sample, and with the LP
  bound a proof of its optimality when they meet.

Rows of equal QI values are one point with a multiplicity (distinct points: a few hundred
per value). The release step is captured by wrapping
:func:`republish.models.whole_release.solve_whole_release` while the series is published
with ``--time-limit`` per release (an experiment, not a product path: it reads private
helpers of the pair bound).

Usage::

    python benchmarks/bucket_assignment_lp.py --release 4 --buckets 3 --sample 300
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np
from ortools.graph.python import min_cost_flow
from ortools.linear_solver import pywraplp
from run_line import run_line  # benchmarks/ is the script's folder

import republish.models.whole_release as whole_release
from republish.datasets import dynamic_series, load_adult
from republish.models import whole_release_pair_bound as pair_bound
from republish.models.whole_release_counts import ReleaseCounts
from republish.models.whole_release_pair_network import nodes_of, qi_distances
from republish.models.whole_release_row_bound import _separable
from republish.solver.m_invariance import publish_m_invariant

QIS = ["age", "sex", "education", "native-country"]
SCALE = 10_000  # min-cost flow costs are integers


class Captured(Exception):
    """Raised by the wrapper once the release's problem is captured."""


def capture_release(release: int, m: int, time_limit: float, seed: int) -> tuple[Any, Any]:
    """The whole-release problem and its extent at release ``release`` of the series."""
    table, schema = load_adult(sensitive="occupation", qis=QIS)
    series = dynamic_series(table, 20_000, 2_000, release, seed)
    original = whole_release.solve_whole_release
    found: list[tuple[Any, Any]] = []
    at = [0]

    def wrapper(problem: Any, **kwargs: Any) -> Any:
        if at[0] == release:
            found.append((problem, kwargs["extent"]))
            raise Captured
        return original(problem, **kwargs)

    modules = [module for module in list(sys.modules.values())
               if getattr(module, "solve_whole_release", None) is original]
    for module in modules:
        module.solve_whole_release = wrapper  # type: ignore[attr-defined]
    try:
        state = None
        for number in range(1, release + 1):
            at[0] = number
            try:
                step = publish_m_invariant(series[number - 1], schema, m, state, mode="auto",
                                           time_limit=time_limit,
                                           rng=np.random.default_rng(seed))
            except Captured:
                break
            state = step.state
    finally:
        for module in modules:
            module.solve_whole_release = original  # type: ignore[attr-defined]
    if not found:
        raise SystemExit(f"release {release} ran no whole-release model to capture")
    return found[0]


def transport(cost: np.ndarray, supply: np.ndarray, demand: np.ndarray
              ) -> tuple[float, np.ndarray]:
    a, b = cost.shape
    flow = min_cost_flow.SimpleMinCostFlow()
    tails = np.repeat(np.arange(a), b)
    heads = a + np.tile(np.arange(b), a)
    flow.add_arcs_with_capacity_and_unit_cost(
        tails.astype(np.int32), heads.astype(np.int32), np.full(a * b, 10**9, np.int64),
        np.round(cost.ravel() * SCALE).astype(np.int64))
    flow.set_nodes_supplies(np.arange(a + b, dtype=np.int32),
                            np.concatenate([supply, -demand]).astype(np.int64))
    assert flow.solve() == flow.OPTIMAL
    return flow.optimal_cost() / SCALE, np.asarray(flow.flows(np.arange(a * b))).reshape(a, b)


def bucket_instance(problem: Any, extent: Any, bucket: int, sample: int, seed: int
                    ) -> dict[str, Any]:
    counts = ReleaseCounts.of(problem)
    numeric, chains = _separable(problem, extent)
    coordinates = np.column_stack([*numeric, *(chain[0][0] for chain in chains)])
    _, key = np.unique(coordinates, axis=0, return_inverse=True)
    distances = qi_distances(numeric, chains)
    signature = sorted(problem.signatures[bucket])
    old = counts.old_rows[bucket]
    rng = np.random.default_rng(seed)
    per_value = [old[problem.values[old] == v] for v in signature]
    n = min(min(len(rows) for rows in per_value), sample)
    chosen = [rng.choice(rows, n, replace=False) for rows in per_value]
    (u, mu), (v, mv), (w, mw) = (nodes_of(key.ravel(), rows) for rows in chosen)
    lam = 1.0 / np.array([float(pair_bound._line_ratio(3))] * len(numeric)
                         + [pair_bound._chain_ratio(chain, 3) for chain in chains])
    return {"old": len(old), "n": n, "mu": mu, "mv": mv, "mw": mw,
            "duv": np.stack([d(u, v) for d in distances]),
            "duw": np.stack([d(u, w) for d in distances]),
            "dvw": np.stack([d(v, w) for d in distances]), "lam": lam,
            "size": float(len(signature))}


def solve_instance(inst: dict[str, Any], scip_seconds: float) -> dict[str, Any]:
    duv, duw, dvw, size = inst["duv"], inst["duw"], inst["dvw"], inst["size"]
    mu, mv, mw = inst["mu"], inst["mv"], inst["mw"]

    def group_cost(u: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``size·Σ_q max`` of the pairs' extents of the groups ``(u, v, w)`` (point
        indices, broadcast together)."""
        return size * np.maximum(np.maximum(duv[:, u, v], duw[:, u, w]), dvw[:, v, w]).sum(0)

    def triple_costs(triples: np.ndarray) -> np.ndarray:
        return group_cost(triples[:, 0], triples[:, 1], triples[:, 2])

    pairs = sum(transport(size * np.einsum("q,qab->ab", inst["lam"], d), s1, s2)[0]
                for d, s1, s2 in ((duv, mu, mv), (duw, mu, mw), (dvw, mv, mw)))
    _, matched = transport(size * duv.sum(0), mu, mv)
    iu, jv = np.nonzero(matched)
    third = group_cost(iu[:, None], jv[:, None], np.arange(len(mw))[None, :])
    primal, assigned = transport(third, matched[iu, jv], mw)
    columns = list(dict.fromkeys((int(iu[a]), int(jv[a]), int(b))
                                 for a, b in zip(*np.nonzero(assigned), strict=True)))
    started, rounds, lp, bound = time.perf_counter(), 0, float("nan"), -float("inf")
    while True:
        rounds += 1
        solver = pywraplp.Solver.CreateSolver("GLOP")
        x = [solver.NumVar(0, solver.infinity(), "") for _ in columns]
        rows = [[solver.Constraint(float(s), float(s)) for s in supply]
                for supply in (mu, mv, mw)]
        triples = np.array(columns)
        cost = triple_costs(triples)
        objective = solver.Objective()
        for k, triple in enumerate(columns):
            for axis in range(3):
                rows[axis][triple[axis]].SetCoefficient(x[k], 1)
            objective.SetCoefficient(x[k], float(cost[k]))
        objective.SetMinimization()
        assert solver.Solve() == pywraplp.Solver.OPTIMAL
        lp = solver.Objective().Value()
        alpha, beta, gamma = (np.array([c.dual_value() for c in axis_rows])
                              for axis_rows in rows)
        least, fresh = np.empty(len(mu)), []
        for first in range(0, len(mu), 16):
            block = np.arange(first, min(first + 16, len(mu)))
            rc = group_cost(block[:, None, None], np.arange(len(mv))[None, :, None],
                            np.arange(len(mw))[None, None, :]) \
                - alpha[block, None, None] - beta[None, :, None] - gamma[None, None, :]
            least[block] = rc.reshape(len(block), -1).min(axis=1)
            for k, a in enumerate(block):
                flat = rc[k].ravel()
                negative = np.flatnonzero(flat < -1e-7)
                for f in negative[np.argsort(flat[negative])[:10]]:
                    fresh.append((int(a), int(f // len(mw)), int(f % len(mw))))
        # every group holds one first-value row: the least reduced cost per such row
        bound = max(bound, lp + float((mu * np.minimum(least, 0.0)).sum()))
        if not fresh:
            break
        columns = list(dict.fromkeys(columns + fresh))
    seconds = time.perf_counter() - started
    solver = pywraplp.Solver.CreateSolver("SCIP")
    x = [solver.IntVar(0, solver.infinity(), "") for _ in columns]
    for axis, supply in enumerate((mu, mv, mw)):
        holding: dict[int, list[Any]] = defaultdict(list)
        for k, triple in enumerate(columns):
            holding[triple[axis]].append(x[k])
        for point, rows_of_point in enumerate(supply):
            solver.Add(solver.Sum(holding[point]) == int(rows_of_point))
    cost = triple_costs(np.array(columns))
    solver.Minimize(solver.Sum([float(cost[k]) * x[k] for k in range(len(columns))]))
    solver.SetTimeLimit(int(scip_seconds * 1000))
    status = solver.Solve()
    integer = solver.Objective().Value() if status in (pywraplp.Solver.OPTIMAL,
                                                       pywraplp.Solver.FEASIBLE) else None
    return {"pairs": pairs, "primal": primal, "lp": lp, "bound": bound, "integer": integer,
            "rounds": rounds, "columns": len(columns), "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=int, default=4)
    parser.add_argument("--m", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--buckets", type=int, default=3)
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scip-seconds", type=float, default=120.0)
    args = parser.parse_args()
    if args.m != 3:
        raise SystemExit("--m: only 3 (three-index assignments)")
    problem, extent = capture_release(args.release, args.m, args.time_limit, args.seed)
    counts = ReleaseCounts.of(problem)
    sizes = [len(rows) if len(problem.signatures[b]) == 3 else -1
             for b, rows in enumerate(counts.old_rows)]
    largest = np.argsort(sizes, kind="stable")[::-1][:args.buckets]
    lines = ["| bucket | old rows | sample per value | distinct points | uniform pairs | "
             "primal (pairs, then third) | LP (column generation) | SCIP on its triples | "
             "pairs below LP | rounds, s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for bucket in largest.tolist():
        inst = bucket_instance(problem, extent, bucket, args.sample, 0)
        result = solve_instance(inst, args.scip_seconds)
        integer = "-" if result["integer"] is None else f"{result['integer']:.2f}"
        lines.append(
            f"| {bucket} | {inst['old']} | {inst['n']} | "
            f"{len(inst['mu'])}, {len(inst['mv'])}, {len(inst['mw'])} | "
            f"{result['pairs']:.2f} | {result['primal']:.2f} | {result['lp']:.2f} "
            f"(bound {result['bound']:.2f}) | {integer} | "
            f"{100 * (1 - result['pairs'] / result['lp']):.1f} % | "
            f"{result['rounds']}, {result['seconds']:.0f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    print(run_line())
    print("\n".join(lines))


if __name__ == "__main__":
    main()
