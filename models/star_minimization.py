"""Star minimization (Problem 1 of the l-diversity paper) as a CP-SAT model, small tables.

Partition ``n`` rows into QI-groups, each l-eligible (Definition 2); a QI-group keeps a QI
value where all its rows agree and shows ``*`` elsewhere (Definition 1); minimize the
stars. NP-hard for ``l >= 3`` (Theorem 4.7), so this is for small tables (tests, the §4
gadget, certificates of heuristics); it needs one Boolean per row and group slot.

Variables (``G = n // l`` group slots: every non-empty group holds at least ``l`` rows):

* ``x[t, g]``: row ``t`` is in slot ``g``; ``sum_g x[t, g] = 1``;
* ``y[g, i, a]``: slot ``g`` holds a row with value ``a`` on QI ``A_i``
  (``y >= x[t, g]`` for those rows);
* ``z[g, i]``: slot ``g`` shows ``*`` on ``A_i``; ``sum_a y[g, i, a] <= 1 + (k_i - 1) z[g, i]``;
* ``s[t, i]``: row ``t`` shows ``*`` on ``A_i``; ``s[t, i] >= x[t, g] + z[g, i] - 1``.

l-eligibility of slot ``g``: ``l * sum_{t: t[B] = v} x[t, g] <= sum_t x[t, g]`` for every
SA value ``v``. Objective: ``min sum s``. Symmetry: row ``t`` may only use slots
``0 .. t``, and a slot is used only if the previous one is.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from ortools.sat.python import cp_model

from republish.certificate import Certificate
from republish.errors import InputError, ParameterError
from republish.models.solve import certificate, check_solver_options, solve_cp_sat

__all__ = ["StarMinimizationSolution", "solve_star_minimization"]

STEP = "star-minimization"

#: Rows above which the model is refused (it grows with n^2 / l Booleans).
MAX_ROWS = 200


@dataclass(frozen=True)
class StarMinimizationSolution:
    """``groups[t]``: QI-group (slot) of row ``t`` (``None`` without a solution);
    ``objective``: stars (``None`` without a solution); ``bound``: CP-SAT's proven lower
    bound (0 when it proves nothing)."""

    status: str
    objective: int | None
    bound: float
    wall_time_s: float
    groups: np.ndarray | None

    @property
    def gap(self) -> float | None:
        return self.certificate.gap if self.objective is not None else None

    @property
    def certificate(self) -> Certificate:
        return certificate(STEP, self.status, self.objective, self.bound,
                           times={"model": self.wall_time_s})


def _canonical(groups: np.ndarray) -> np.ndarray:
    """Renumber groups by first row, so that row ``t`` uses a slot ``<= t``."""
    _, first, inverse = np.unique(groups, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    return rank[inverse]


def solve_star_minimization(
    qi_codes: np.ndarray,
    sensitive: np.ndarray | Sequence[object],
    l: int,  # noqa: E741
    *,
    hint_groups: np.ndarray | None = None,
    time_limit: float = 10.0,
    num_workers: int = 2,
    random_seed: int = 0,
    max_rows: int = MAX_ROWS,
) -> StarMinimizationSolution:
    """Minimize the stars of an l-diverse suppression of the rows (see module docstring).

    ``hint_groups`` (any l-diverse partition, e.g. TP+'s) seeds the search.
    """
    start = time.perf_counter()
    if isinstance(l, bool) or not isinstance(l, int | np.integer) or l < 1:
        raise ParameterError(f"l must be a positive integer, got {l!r}.")
    check_solver_options(time_limit, num_workers)
    codes = np.asarray(qi_codes)
    value, _ = pd.factorize(np.asarray(sensitive), sort=True)
    n = len(value)
    if codes.ndim != 2 or len(codes) != n:
        raise ParameterError("qi_codes must be (n, d) with one SA value per row.")
    if n > max_rows:
        raise ParameterError(
            f"exact star minimization is limited to {max_rows} rows (got {n}); use TP+ or "
            "the tuple minimization model for larger tables."
        )
    counts = np.bincount(value) if n else np.zeros(1, dtype=np.int64)
    if n and l * int(counts.max()) > n:
        raise InputError(f"the rows are not {l}-eligible; no l-diverse generalization exists.")
    d = codes.shape[1]
    slots = max(n // l, 1) if n else 0
    model = cp_model.CpModel()
    x = {
        (t, g): model.new_bool_var(f"x_{t}_{g}")
        for t in range(n)
        for g in range(min(t + 1, slots))
    }
    for t in range(n):
        model.add_exactly_one(x[t, g] for g in range(min(t + 1, slots)))
    used = [model.new_bool_var(f"used_{g}") for g in range(slots)]
    for g in range(slots):
        members = [x[t, g] for t in range(g, n)]
        model.add_max_equality(used[g], members)
        if g:
            model.add_implication(used[g], used[g - 1])
        size = sum(members)
        for v in range(len(counts)):
            model.add(l * sum(x[t, g] for t in range(g, n) if value[t] == v) <= size)
    z = {}
    for g in range(slots):
        for i in range(d):
            levels = np.unique(codes[g:, i])
            if len(levels) <= 1:
                continue
            z[g, i] = model.new_bool_var(f"z_{g}_{i}")
            present = []
            for a in levels:
                y = model.new_bool_var(f"y_{g}_{i}_{a}")
                for t in range(g, n):
                    if codes[t, i] == a:
                        model.add_implication(x[t, g], y)
                present.append(y)
            model.add(sum(present) <= 1 + (len(levels) - 1) * z[g, i])
    s = {}
    for t in range(n):
        for i in range(d):
            slots_with_star = [g for g in range(min(t + 1, slots)) if (g, i) in z]
            if not slots_with_star:
                continue
            s[t, i] = model.new_bool_var(f"s_{t}_{i}")
            for g in slots_with_star:
                model.add(s[t, i] >= x[t, g] + z[g, i] - 1)
    model.minimize(sum(s.values()))
    hint = None
    if hint_groups is not None and n:
        slot = _canonical(np.asarray(hint_groups))
        if slot.max() < slots:
            hint = [(variable, int(slot[t] == g)) for (t, g), variable in x.items()]

    solved = solve_cp_sat(model, time_limit=time_limit, workers=num_workers, seed=random_seed,
                          hint=hint)
    wall = time.perf_counter() - start
    bound = max(solved.bound, 0.0) if solved.bound is not None else 0.0
    if not solved.found or solved.objective is None:
        return StarMinimizationSolution(solved.status, None, bound, wall, None)
    groups = np.array(
        [next(g for g in range(min(t + 1, slots)) if solved.bool_value(x[t, g]))
         for t in range(n)],
        dtype=np.int64,
    )
    return StarMinimizationSolution(solved.status, int(round(solved.objective)), bound, wall,
                                    groups)
