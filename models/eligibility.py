"""Closest m-eligible table as an integer program (CP-SAT), §III-C of Tobar Nicolau et al.

The paper's program, on the counts ``c_i`` of the sensitive values::

    min  sum_i z_i,   z_i >= |c_i - x_i|
    s.t. m * x_i - sum_j x_j <= 0      for every value i    (eligibility)
         x_i, z_i integer >= 0

is written here with ``z_i`` split into counterfeits ``a_i`` and deletions ``d_i``
(``x_i = c_i + a_i - d_i``) so that the two can carry different per-unit costs and be
switched off:

* ``mode="counterfeit"``: ``d_i = 0`` -- the minimal m-eligible superset (§III-A);
* ``mode="delete"``: ``a_i = 0`` -- the maximal m-eligible subset (§III-B);
* ``mode="hybrid"``: both -- the closest m-eligible table (Definition 8).

``deletion_caps[v]`` bounds ``d_v`` (rows that must be published now). Counterfeits take
values present in ``counts`` only, unless ``allow_new_values``: then, when fewer than
``m`` values are present, ``m - l`` new values (zero-count keys of ``counts``, then
``new_values``, then generated ``counterfeit-value-k``) may receive counterfeits; more new
values never lower the objective (water-filling, Proposition 3), so no more are modelled.

Empty counts (no new rows) are trivially eligible (objective 0). With fewer than ``m``
values and no new values, ``mode="counterfeit"`` raises
:class:`~republish.errors.ParameterError`; the other modes can only delete every row,
and say ``INFEASIBLE`` if deletion caps forbid it.

Bounds used (neither removes an optimum, costs being positive): any optimum adds at most
``A = max(0, c*m - n)`` counterfeits, the cost of the counterfeit-only optimum
(Proposition 3), and raises no value above the largest original count ``c``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal

from ortools.sat.python import cp_model

from republish.errors import InputError, ParameterError
from republish.models.solve import check_solver_options, solve_cp_sat
from republish.parameters import validate_m
from republish.problems.eligibility import (
    EligibilitySolution,
    available_counterfeit_values,
    present_values,
    solution_from_targets,
    too_few_values_message,
    validate_costs,
    validate_counts,
)

Mode = Literal["counterfeit", "delete", "hybrid"]
MODES: tuple[str, ...] = ("counterfeit", "delete", "hybrid")

__all__ = ["MODES", "Mode", "solve_eligibility"]


def _integer_weights(counterfeit_cost: float, deletion_cost: float) -> tuple[int, int, int]:
    """Integer objective weights and the divisor that turns them back into the costs."""
    fractions = [
        Fraction(cost).limit_denominator(10**6) for cost in (counterfeit_cost, deletion_cost)
    ]
    scale = math.lcm(*(f.denominator for f in fractions))
    weight_a, weight_d = (int(f * scale) for f in fractions)
    return max(weight_a, 1), max(weight_d, 1), scale


def _validate_caps(
    deletion_caps: Mapping[str, int] | None, original: Mapping[str, int]
) -> dict[str, int]:
    if deletion_caps is None:
        return {}
    caps: dict[str, int] = {}
    for value, cap in deletion_caps.items():
        name = str(value)
        if name not in original:
            raise InputError(
                f"deletion_caps names {name!r}, which is not among the counted sensitive "
                f"values {sorted(original)[:8]}."
            )
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise ParameterError(
                f"deletion cap of {name!r} must be a non-negative integer, got {cap!r}."
            )
        caps[name] = cap
    return caps


def solve_eligibility(
    counts: Mapping[str, int],
    m: int,
    mode: Mode,
    counterfeit_cost: float = 1.0,
    deletion_cost: float = 1.0,
    deletion_caps: Mapping[str, int] | None = None,
    allow_new_values: bool = False,
    new_values: Sequence[str] = (),
    time_limit: float = 10.0,
    num_workers: int = 1,
    hint: EligibilitySolution | None = None,
    random_seed: int = 0,
) -> EligibilitySolution:
    """Solve the closest-m-eligible-table program of §III-C with CP-SAT.

    Returns an :class:`EligibilitySolution` with method ``mode``, the target counts, the
    changes per value, the objective (in cost units), CP-SAT's status and best bound,
    and the wall time of building and solving. ``hint`` (e.g. a heuristic's solution)
    seeds the search.
    """
    start = time.perf_counter()
    original = validate_counts(counts)
    m = validate_m(m)
    if mode not in MODES:
        raise ParameterError(f"mode must be one of {list(MODES)}, got {mode!r}.")
    counterfeit_cost, deletion_cost = validate_costs(counterfeit_cost, deletion_cost)
    caps = _validate_caps(deletion_caps, original)
    check_solver_options(time_limit, num_workers)

    n = sum(original.values())
    if n == 0:
        return solution_from_targets(
            mode, m, original, original, status="OPTIMAL",
            solve_time_s=time.perf_counter() - start, bound=0.0,
        )
    present = present_values(original)
    counterfeit_values: list[str] = []
    if mode != "delete":
        available = available_counterfeit_values(original, m, allow_new_values, new_values)
        if available is None and mode == "counterfeit":
            raise ParameterError(too_few_values_message(m, len(present)))
        # Fewer than m values and no new ones: added_bound below is 0, only deletions help.
        counterfeit_values = list(present) if available is None else available
    values = list(original) + [v for v in counterfeit_values if v not in original]

    largest = max(original.values())
    # Counterfeits of any optimum: at most the counterfeit-only optimum (Proposition 3).
    added_bound = max(0, largest * m - n) if len(counterfeit_values) >= m else 0
    weight_a, weight_d, scale = _integer_weights(counterfeit_cost, deletion_cost)

    model = cp_model.CpModel()
    c = {v: original.get(v, 0) for v in values}
    # No optimum raises a value above the largest original count C: with every target
    # at most X >= C, the cheapest choice costs counterfeit_cost * max(0, m*X - n),
    # which grows with X, so the bound x_v <= C removes no optimum.
    a = {
        v: model.new_int_var(
            0, min(added_bound, largest - c[v]) if v in counterfeit_values else 0, f"a[{v}]"
        )
        for v in values
    }
    d = {
        v: model.new_int_var(
            0, 0 if mode == "counterfeit" else min(c[v], caps.get(v, c[v])), f"d[{v}]"
        )
        for v in values
    }
    x = {v: model.new_int_var(0, largest, f"x[{v}]") for v in values}
    total = model.new_int_var(0, largest * len(values), "N")
    for v in values:
        model.add(x[v] == c[v] + a[v] - d[v])
    model.add(total == sum(x.values()))
    model.add(sum(a.values()) <= added_bound)
    for v in values:
        # Eligibility: m * x_v <= sum_j x_j.
        model.add(m * x[v] <= total)
    model.minimize(weight_a * sum(a.values()) + weight_d * sum(d.values()))

    hints: list[tuple[Any, int]] = []
    if hint is not None and all(v in x for v in hint.target_counts):
        targets = {v: min(largest, int(hint.target_counts.get(v, 0))) for v in values}
        for v in values:
            hints += [(x[v], targets[v]), (a[v], max(0, targets[v] - c[v])),
                      (d[v], max(0, c[v] - targets[v]))]
        hints.append((total, sum(targets.values())))

    solved = solve_cp_sat(model, time_limit=time_limit, workers=num_workers,
                          seed=random_seed, hint=hints)
    if solved.status == "ERROR":
        raise RuntimeError("CP-SAT rejected the eligibility model (MODEL_INVALID).")
    if not solved.found:
        return _no_solution(mode, m, original, solved.status, time.perf_counter() - start)
    targets = {v: solved.int_value(x[v]) for v in values}
    targets = {v: t for v, t in targets.items() if v in original or t > 0}
    bound = None if solved.bound is None else solved.bound / scale
    return solution_from_targets(
        mode, m, original, targets, status=solved.status,
        solve_time_s=time.perf_counter() - start, counterfeit_cost=counterfeit_cost,
        deletion_cost=deletion_cost, bound=bound,
    )


def _no_solution(
    mode: str, m: int, original: dict[str, int], status: str, elapsed: float
) -> EligibilitySolution:
    return EligibilitySolution(
        method=mode, m=m, original_counts=dict(original), target_counts=dict(original),
        counterfeits={}, deletions={}, objective=math.inf, status=status,
        solve_time_s=elapsed, bound=None,
    )
