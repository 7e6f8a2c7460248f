"""Exact balancing, extra rows and eligibility of one m-invariant release, on counts.

The m-invariance paper (Xiao & Tao, SIGMOD 2007, §4.1) balances every bucket of old rows
with new rows of the missing values, else counterfeits, then makes the new rows left
over m-eligible and assigns them (§4.2); the m-eligibility paper (Tobar Nicolau et al.,
TIFS 2024, §III) makes the leftover eligible with counterfeits, deferrals or both. This
model takes all those count decisions at once (design notes, "Optimization view").

Symbols: bucket ``b`` has signature ``S_b`` and ``c[b,v]`` old rows of value ``v``;
``n[v]`` new rows of value ``v`` are available.

* ``k[b]`` rows per value after balancing (``k[b] >= max_v c[b,v]``; larger when whole
  extra rows of the signature join), ``k[b]`` groups later;
* ``x[b,v]`` new rows of ``v`` joining ``b``, ``f[b,v]`` counterfeits of ``v`` in ``b``:
  ``c[b,v] + x[b,v] + f[b,v] = k[b]``;
* every group of ``b`` holds a real row: ``Σ_v (c[b,v] + x[b,v]) >= k[b]`` (enough: the
  real rows of each value can be placed round-robin over the groups);
* leftover ``L[v] = n[v] - Σ_b x[b,v]``; ``D[v] <= L[v]`` deferred (only when allowed);
  ``E[v]`` eligibility counterfeits, of values with a published leftover row (paper's
  Proposition 3), or of ``new_values`` when ``allow_new_values``;
* with ``P[v] = L[v] - D[v]``, the leftover splits into m-unique groups each holding a
  real row if and only if ``m·(P[v] + E[v]) <= Σ_u (P[u] + E[u])`` and
  ``P[v] + E[v] <= Σ_u P[u]`` for every ``v`` (the lemma of
  :mod:`republish.problems.buckets`).

Objective: ``Σ f + Σ E + deferral_weight · Σ D``. The model is exact for the counts:
which rows go where is decided afterwards by group formation
(:mod:`republish.models.grouping.formation`). It is a small integer program with a nearly
integral linear relaxation; it is solved with SCIP (OR-Tools model builder) by default,
or with CP-SAT (``engine="cp-sat"``), from the same construction.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Collection, Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from ortools.linear_solver.python import model_builder
from ortools.sat.python import cp_model

from republish.errors import ParameterError
from republish.models.bucket_assignment_result import (
    STEP,
    BucketAssignment,
    bucket_assignment_from_counts,
    bucket_assignment_problems,
    no_solution,
    objective_value,
    validate,
)
from republish.models.solve import certificate, check_solver_options, solve_cp_sat, solve_mip
from republish.problems.buckets import BucketCounts

__all__ = [
    "BucketAssignment",
    "bucket_assignment_from_counts",
    "bucket_assignment_problems",
    "solve_bucket_assignment",
]

Engine = Literal["mip", "cp-sat"]


def solve_bucket_assignment(
    buckets: Sequence[BucketCounts],
    new_counts: Mapping[str, int],
    m: int,
    allow_deferrals: bool = False,
    deferral_weight: float = 1.0,
    time_limit: float = 10.0,
    num_workers: int = 1,
    hint: BucketAssignment | None = None,
    allow_new_values: bool = False,
    new_values: Collection[str] = (),
    random_seed: int = 0,
    eligibility_counterfeits: bool = True,
    engine: Engine = "mip",
) -> BucketAssignment:
    """Minimize ``counterfeits + deferral_weight · deferrals`` over the count decisions.

    Parameters
    ----------
    buckets:
        Old rows per bucket (signatures of at least ``m`` values).
    new_counts:
        New rows (``S−``) per sensitive value.
    allow_deferrals:
        Whether leftover new rows may be held back (partial publication).
    allow_new_values, new_values:
        Whether eligibility counterfeits may also take ``new_values`` absent from the
        leftover (the pipeline passes the known sensitive domain); without it they take
        values with a published leftover row only (m-eligibility paper, Proposition 3).
    hint:
        A solution (e.g. the greedy pipeline's, see :func:`bucket_assignment_from_counts`)
        given to the solver as a hint.
    eligibility_counterfeits:
        Whether the leftover may receive counterfeits (``False``: deferrals only, the
        m-eligibility paper's partial publication; bucket counterfeits stay allowed).
    engine:
        ``mip`` (default): SCIP through OR-Tools' model builder; ``cp-sat``: the same model
        in CP-SAT (``num_workers``, ``random_seed`` apply). The linear relaxation is
        nearly integral, so SCIP proves 2,000-bucket instances optimal in seconds where
        CP-SAT finds no bound in 30 s (``benchmarks/RESULTS.md``).

    Returns ``status`` ``OPTIMAL``/``FEASIBLE`` with the counts, or ``INFEASIBLE`` (no
    choice publishes the leftover: allow deferrals or new values) / ``TIMEOUT`` without.
    """
    start = time.perf_counter()
    counts = validate(buckets, new_counts, m, deferral_weight)
    check_solver_options(time_limit, num_workers)
    extra = {str(v) for v in new_values} if allow_new_values else set()
    values = sorted(set(counts) | {v for b in buckets for v in b.signature} | extra)
    n = {v: counts.get(v, 0) for v in values}
    total_new = sum(n.values())
    weight = Fraction(deferral_weight).limit_denominator(1000)

    if engine not in ("mip", "cp-sat"):
        raise ParameterError(f"engine must be 'mip' or 'cp-sat', got {engine!r}.")
    # Both APIs share new_int_var / new_bool_var / add / minimize / add_hint.
    model: Any = cp_model.CpModel() if engine == "cp-sat" else model_builder.Model()
    k: list[Any] = []
    x: list[dict[str, Any]] = []
    f: list[dict[str, Any]] = []
    for b, bucket in enumerate(buckets):
        # Every group needs a real row, which bounds the groups of a bucket.
        k_max = bucket.size + sum(n[v] for v in bucket.signature)
        k.append(model.new_int_var(bucket.min_groups, max(k_max, bucket.min_groups), f"k[{b}]"))
        x.append({})
        f.append({})
        for v in bucket.signature:
            room = max(k_max - bucket.count(v), 0)
            x[b][v] = model.new_int_var(0, min(n[v], room), f"x[{b},{v}]")
            f[b][v] = model.new_int_var(0, room, f"f[{b},{v}]")
            model.add(bucket.count(v) + x[b][v] + f[b][v] == k[b])
        model.add(sum(bucket.count(v) + x[b][v] for v in bucket.signature) >= k[b])

    joined = {v: sum(x[b][v] for b in range(len(buckets)) if v in x[b]) for v in values}
    leftover = {v: model.new_int_var(0, n[v], f"L[{v}]") for v in values}
    deferred = {
        v: model.new_int_var(0, n[v] if allow_deferrals else 0, f"D[{v}]") for v in values
    }
    eligible = {
        v: model.new_int_var(0, total_new if eligibility_counterfeits else 0, f"E[{v}]")
        for v in values
    }
    published = {v: leftover[v] - deferred[v] for v in values}
    for v in values:
        model.add(leftover[v] == n[v] - joined[v])
        model.add(deferred[v] <= leftover[v])
        if v not in extra:
            # Proposition 3: counterfeits only of values the published leftover holds.
            present = model.new_bool_var(f"present[{v}]")
            model.add(published[v] >= present)
            model.add(eligible[v] <= total_new * present)
    rows = sum(published[v] + eligible[v] for v in values)
    reals = sum(published.values())
    for v in values:
        model.add(m * (published[v] + eligible[v]) <= rows)
        model.add(published[v] + eligible[v] <= reals)

    counterfeit_sum = sum(f[b][v] for b in range(len(buckets)) for v in f[b]) + sum(
        eligible.values()
    )
    model.minimize(
        weight.denominator * counterfeit_sum + weight.numerator * sum(deferred.values())
    )
    hints: list[tuple[Any, int]] = []
    if hint is not None and hint.feasible and len(hint.targets) == len(buckets):
        for b, bucket in enumerate(buckets):
            hints.append((k[b], hint.targets[b]))
            for v in bucket.signature:
                hints.append((x[b][v], hint.from_new[b].get(v, 0)))
                hints.append((f[b][v], hint.counterfeits[b].get(v, 0)))
        for v in values:
            hints.append((leftover[v], hint.leftover.get(v, 0)))
            hints.append((deferred[v], hint.deferrals.get(v, 0)))
            hints.append((eligible[v], hint.eligibility_counterfeits.get(v, 0)))
    built = time.perf_counter()

    scale = weight.denominator
    relaxed_bound = 0.0
    if engine == "cp-sat":
        solved = solve_cp_sat(model, time_limit=time_limit, workers=num_workers,
                              seed=random_seed, hint=hints)
    else:
        # The linear relaxation is nearly integral: its value (rounded up, the objective
        # being integral in units of 1/scale) often proves the hint or GLOP's vertex
        # optimal; SCIP branches otherwise.
        solved = solve_mip(model, time_limit=time_limit, solver="glop", hint=hints)
        if solved.status == "OPTIMAL" and solved.objective is not None:
            relaxed = math.ceil(solved.objective - 1e-6)
            relaxed_bound = relaxed / scale
            if hint is not None and hint.feasible and round(hint.objective * scale) <= relaxed:
                elapsed = time.perf_counter() - start
                return dataclasses.replace(
                    hint, status="OPTIMAL", bound=hint.objective, wall_time_s=elapsed,
                    certificate=certificate(
                        STEP, "OPTIMAL", hint.objective, hint.objective,
                        heuristic_objective=hint.objective,
                        times={"build": built - start, "relaxation": elapsed - (built - start)},
                        detail="the hint meets the linear relaxation's bound"))
            everything = [*k, *(v for xb in x for v in xb.values()),
                          *(v for fb in f for v in fb.values()), *leftover.values(),
                          *deferred.values(), *eligible.values()]
            relaxation = solved.values(everything)
            if not np.all(np.abs(relaxation - np.round(relaxation)) < 1e-6):
                solved = solve_mip(
                    model, solver="scip",
                    time_limit=max(float(time_limit) - (time.perf_counter() - start), 0.01))
    finished = time.perf_counter()
    times = {"build": built - start, "solve": finished - built}
    if not solved.found:
        bound = _bound(solved.bound, scale) if solved.status == "TIMEOUT" and \
            engine == "cp-sat" else None
        return no_solution(m, solved.status, bound, finished - start)
    value = solved.int_value
    targets = tuple(value(kb) for kb in k)
    from_new = tuple({v: value(xb[v]) for v in xb if value(xb[v])} for xb in x)
    counterfeits = tuple({v: value(fb[v]) for v in fb if value(fb[v])} for fb in f)
    left = {v: value(leftover[v]) for v in values if value(leftover[v])}
    e = {v: value(eligible[v]) for v in values if value(eligible[v])}
    d = {v: value(deferred[v]) for v in values if value(deferred[v])}
    objective = objective_value(
        sum(sum(c.values()) for c in counterfeits), sum(e.values()), sum(d.values()),
        deferral_weight,
    )
    bound = objective if solved.status == "OPTIMAL" else max(_bound(solved.bound, scale),
                                                              relaxed_bound)
    heuristic_objective = hint.objective if hint is not None and hint.feasible else None
    return BucketAssignment(
        m=m,
        targets=targets,
        from_new=from_new,
        counterfeits=counterfeits,
        leftover=left,
        eligibility_counterfeits=e,
        deferrals=d,
        objective=objective,
        status=solved.status,
        bound=bound,
        wall_time_s=finished - start,
        certificate=certificate(
            STEP, solved.status, objective, bound, heuristic_objective=heuristic_objective,
            times=times,
            detail=f"{len(buckets)} buckets, {total_new} new rows, {len(values)} values",
        ),
    )


def _bound(raw: float | None, scale: int) -> float:
    """The solver's proven bound in objective units; never below 0, a bound of every
    objective here."""
    return max(raw / scale, 0.0) if raw is not None else 0.0
