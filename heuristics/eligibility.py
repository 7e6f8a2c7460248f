"""The m-eligibility algorithms of Tobar Nicolau et al. (IEEE TIFS 2024), on value counts.

* :func:`minimal_superset` -- Algorithm 1 (§III-A): add a counterfeit of the least
  frequent value until m-eligible; adds exactly ``max(0, c*m - n)`` rows (Proposition 3,
  ``c`` the largest count), which is optimal.
* :func:`maximal_subset` -- Algorithm 2 (§III-B): repeatedly remove
  ``r_i = max(0, ceil((m*c_i - n)/(m - 1)))`` rows of every value; optimal
  (Proposition 6).
* :func:`greedy_hybrid` -- Algorithm 3 (§III-C): at each step add a counterfeit of the
  least frequent value or delete a row of the most frequent one, whichever leaves the
  smaller total excess ``R = sum_i max(0, c_i - |T|/m)``; no optimality proof.
* :func:`random_counterfeits` -- the baseline of §IV-B (after Anjum et al.'s tau-safety):
  add counterfeits with uniformly random sensitive values until m-eligible.

Ties (§III-D leaves them to the implementer): among equally frequent values the one with
the smallest name is chosen; in Algorithm 3 a tie between adding and deleting goes to
deleting, as in the paper's ``R_del <= R_add``. Excesses are computed as ``m * R`` in
integers, so ties are exact.

New sensitive values: with fewer than ``m`` values present no non-empty superset is
m-eligible. When ``allow_new_values`` is set, ``m - l`` new values (zero-count keys of
``counts`` first, then ``new_values``, then generated ``counterfeit-value-k``) join the
values counterfeits may take, with count 0; more are never needed (the water-filling
argument of Proposition 3). Without them Algorithm 1 and the random baseline raise
:class:`~republish.errors.ParameterError`; Algorithms 2 and 3 return the only m-eligible
subset, the empty table.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from republish.errors import ParameterError
from republish.parameters import validate_m
from republish.problems.eligibility import (
    EligibilitySolution,
    available_counterfeit_values,
    is_m_eligible,
    present_values,
    solution_from_targets,
    too_few_values_message,
    validate_costs,
    validate_counts,
)

__all__ = ["greedy_hybrid", "maximal_subset", "minimal_superset", "random_counterfeits"]


def _counterfeit_pool(
    counts: dict[str, int], m: int, allow_new_values: bool, new_values: Sequence[str]
) -> dict[str, int] | None:
    """Values counterfeits may take, with their counts; ``None`` if fewer than ``m``."""
    values = available_counterfeit_values(counts, m, allow_new_values, new_values)
    return None if values is None else {value: counts.get(value, 0) for value in values}


def _counterfeits_only_input(
    counts: Mapping[str, int],
    m: int,
    counterfeit_cost: float,
    allow_new_values: bool,
    new_values: Sequence[str],
) -> tuple[dict[str, int], int, dict[str, int] | None]:
    """Validated counts and ``m`` of Algorithm 1 and the random baseline, and the pool.

    The pool is ``None`` for an empty table (m-eligible as it is).

    Raises
    ------
    ParameterError
        if fewer than ``m`` values are present and new values are not allowed.
    """
    original = validate_counts(counts)
    m = validate_m(m)
    validate_costs(counterfeit_cost, 1.0)
    if sum(original.values()) == 0:
        return original, m, None
    pool = _counterfeit_pool(original, m, allow_new_values, new_values)
    if pool is None:
        raise ParameterError(too_few_values_message(m, len(present_values(original))))
    return original, m, pool


def _water_fill(pool: dict[str, int], added: int) -> dict[str, int]:
    """Add ``added`` rows one at a time to the least frequent value (ties: smallest name).

    Closed form of that loop: every value below a level ``L`` is raised to ``L`` and the
    remaining rows go, one each, to the values at level ``L`` in name order.
    """
    order = sorted(pool, key=lambda value: (pool[value], value))
    sizes = [pool[value] for value in order]
    level, raised, below = sizes[0], 0, 0
    # Raise the level through the sorted counts while the rows last.
    while True:
        while below < len(sizes) and sizes[below] <= level:
            below += 1
        next_level = sizes[below] if below < len(sizes) else None
        step_cost = below if next_level is None else below * (next_level - level)
        if next_level is None or raised + step_cost > added:
            extra_levels = (added - raised) // below
            level += extra_levels
            raised += extra_levels * below
            break
        raised += step_cost
        level = next_level
    targets = {value: max(pool[value], level) for value in pool}
    remaining = added - raised
    at_level = sorted(value for value in pool if targets[value] == level)
    for value in at_level[:remaining]:
        targets[value] += 1
    return targets


def minimal_superset(
    counts: Mapping[str, int],
    m: int,
    *,
    allow_new_values: bool = False,
    new_values: Sequence[str] = (),
    counterfeit_cost: float = 1.0,
) -> EligibilitySolution:
    """Algorithm 1: the minimal m-eligible superset (counterfeits only).

    Adds ``max(0, c*m - n)`` counterfeits (Proposition 3), each with the currently least
    frequent value, so the result is optimal (status ``OPTIMAL``, bound = objective).

    Raises
    ------
    ParameterError
        if fewer than ``m`` values are present and new values are not allowed.
    """
    start = time.perf_counter()
    original, m, pool = _counterfeits_only_input(
        counts, m, counterfeit_cost, allow_new_values, new_values
    )
    if pool is None:
        return _unchanged("algorithm-1", m, original, start)
    total = sum(original.values())
    largest = max(original.values())
    added = max(0, largest * m - total)
    targets = _water_fill(pool, added)
    objective = counterfeit_cost * added
    return solution_from_targets(
        "algorithm-1", m, original, targets, status="OPTIMAL",
        solve_time_s=time.perf_counter() - start, counterfeit_cost=counterfeit_cost,
        bound=objective,
    )


def maximal_subset(
    counts: Mapping[str, int], m: int, *, deletion_cost: float = 1.0
) -> EligibilitySolution:
    """Algorithm 2: the maximal m-eligible subset (deletions only).

    Repeats ``r_i = max(0, ceil((m*c_i - n)/(m - 1)))`` removals of every value until
    m-eligible; optimal by Proposition 6 (status ``OPTIMAL``). With fewer than ``m``
    values present it ends with the empty table, the only m-eligible subset.
    """
    start = time.perf_counter()
    original = validate_counts(counts)
    m = validate_m(m)
    validate_costs(1.0, deletion_cost)
    current = dict(original)
    while not is_m_eligible(current, m):
        total = sum(current.values())
        for value, count in current.items():
            # ceil(a / b) for integers with b > 0 is -((-a) // b).
            current[value] = count - max(0, -((total - m * count) // (m - 1)))
    objective = deletion_cost * (sum(original.values()) - sum(current.values()))
    return solution_from_targets(
        "algorithm-2", m, original, current, status="OPTIMAL",
        solve_time_s=time.perf_counter() - start, deletion_cost=deletion_cost, bound=objective,
    )


def _scaled_excess(counts: np.ndarray, total: int, m: int) -> int:
    """``m * R`` with ``R = sum_i max(0, c_i - total/m)``, an integer."""
    return int(np.maximum(m * counts - total, 0).sum())


def greedy_hybrid(
    counts: Mapping[str, int],
    m: int,
    counterfeit_cost: float = 1.0,
    deletion_cost: float = 1.0,
    *,
    allow_new_values: bool = False,
    new_values: Sequence[str] = (),
    max_steps: int | None = None,
) -> EligibilitySolution:
    """Algorithm 3: greedy counterfeits and deletions (hybrid, status ``HEURISTIC``).

    Each step compares adding a counterfeit of the least frequent value with deleting a
    row of the most frequent value and takes the one with the larger decrease of the
    excess ``R`` per unit cost; with equal costs this is the paper's
    ``R_del <= R_add -> delete``. Counterfeits take values present in ``counts`` (and new
    values when allowed and needed); with fewer than ``m`` values available the result is
    the empty table.

    The algorithm changes one row per step, so counts of billions of rows take billions
    of steps: past ``max_steps`` (None: no limit) it raises
    :class:`~republish.errors.ParameterError`.
    """
    start = time.perf_counter()
    original = validate_counts(counts)
    m = validate_m(m)
    counterfeit_cost, deletion_cost = validate_costs(counterfeit_cost, deletion_cost)
    pool = _counterfeit_pool(original, m, allow_new_values, new_values)
    if pool is None:
        # Only the empty table is m-eligible with fewer than m values.
        targets = {value: 0 for value in original} if not is_m_eligible(original, m) else original
        return solution_from_targets(
            "hybrid-greedy", m, original, targets, status="HEURISTIC",
            solve_time_s=time.perf_counter() - start, counterfeit_cost=counterfeit_cost,
            deletion_cost=deletion_cost,
        )
    names = sorted(pool)
    # In name order, argmin/argmax return the smallest name among tied counts.
    current = np.array([pool[value] for value in names], dtype=np.int64)
    total = int(current.sum())
    excess = _scaled_excess(current, total, m)
    rows = total
    # Each step is one modification; the guard only stops a run-away loop.
    guard = 4 * (int(current.max()) * m + total) + 16
    steps = 0
    while excess > 0:
        steps += 1
        if max_steps is not None and steps > max_steps:
            raise ParameterError(
                f"counts: Algorithm 3 (hybrid-greedy) changes one row per step and these "
                f"counts ({rows} rows) need more than {max_steps} steps; use method "
                "'counterfeit', 'delete' or 'hybrid' (Algorithms 1 and 2 take any size).")
        if steps > guard:
            raise RuntimeError(f"Algorithm 3 did not reach {m}-eligibility in {guard} steps.")
        low, high = int(np.argmin(current)), int(np.argmax(current))
        # m*R after the step = excess of the other values at the new |T|, plus the
        # changed value's own term.
        scaled_low, scaled_high = m * int(current[low]), m * int(current[high])
        excess_add = (
            _scaled_excess(current, total + 1, m)
            - max(0, scaled_low - total - 1) + max(0, scaled_low + m - total - 1)
        )
        excess_del = (
            _scaled_excess(current, total - 1, m)
            - max(0, scaled_high - total + 1) + max(0, scaled_high - m - total + 1)
        )
        gain_del, gain_add = excess - excess_del, excess - excess_add
        if gain_del * counterfeit_cost >= gain_add * deletion_cost:
            current[high] -= 1
            total -= 1
            excess = excess_del
        else:
            current[low] += 1
            total += 1
            excess = excess_add
    targets = dict(zip(names, (int(c) for c in current), strict=True))
    return solution_from_targets(
        "hybrid-greedy", m, original, targets, status="HEURISTIC",
        solve_time_s=time.perf_counter() - start, counterfeit_cost=counterfeit_cost,
        deletion_cost=deletion_cost,
    )


def random_counterfeits(
    counts: Mapping[str, int],
    m: int,
    seed: int | None = 0,
    *,
    allow_new_values: bool = False,
    new_values: Sequence[str] = (),
    max_counterfeits: int | None = None,
    counterfeit_cost: float = 1.0,
) -> EligibilitySolution:
    """Baseline of §IV-B: counterfeits with uniformly random values until m-eligible.

    Values are drawn uniformly from those present (plus the new values of
    ``allow_new_values`` when fewer than ``m`` are present). The draw is simulated in
    exact jumps: with ``g = m * max_i c_i - |T|`` no table is eligible before ``g`` more
    rows (one row lowers ``g`` by at most 1), so ``g`` draws are taken at once as one
    multinomial sample, which has the same distribution as ``g`` single draws.

    ``max_counterfeits`` (default ``100 * max(c*m - n, m)``) stops a run that does not
    converge -- with ``m`` equal to the number of values it must hit exactly equal counts;
    the result then has status ``INFEASIBLE`` and is *not* m-eligible. Otherwise the
    status is ``HEURISTIC``.
    """
    start = time.perf_counter()
    original, m, pool = _counterfeits_only_input(
        counts, m, counterfeit_cost, allow_new_values, new_values
    )
    if pool is None:
        return _unchanged("random", m, original, start)
    total = sum(original.values())
    names = list(pool)
    current = np.array([pool[value] for value in names], dtype=np.int64)
    optimum = max(0, int(current.max()) * m - total)
    cap = 100 * max(optimum, m) if max_counterfeits is None else int(max_counterfeits)
    if cap < 0:
        raise ParameterError(f"max_counterfeits must be non-negative, got {max_counterfeits}.")
    generator = np.random.default_rng(seed)
    probabilities = np.full(len(names), 1.0 / len(names))
    added = 0
    distance = m * int(current.max()) - (total + added)
    while distance > 0 and added < cap:
        jump = min(distance, cap - added)
        current += generator.multinomial(jump, probabilities)
        added += jump
        distance = m * int(current.max()) - (total + added)
    targets = dict(zip(names, (int(c) for c in current), strict=True))
    return solution_from_targets(
        "random", m, original, targets, status="HEURISTIC" if distance <= 0 else "INFEASIBLE",
        solve_time_s=time.perf_counter() - start, counterfeit_cost=counterfeit_cost,
    )


def _unchanged(method: str, m: int, original: dict[str, int], start: float) -> EligibilitySolution:
    """The empty table (no rows) is trivially m-eligible."""
    return solution_from_targets(
        method, m, original, original, status="OPTIMAL",
        solve_time_s=time.perf_counter() - start, bound=0.0,
    )
