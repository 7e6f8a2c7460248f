"""Tuple minimization (Problem 2 of the l-diversity paper) as an integer program over counts.

Rows with identical QI values form the QI-groups ``Q``; ``h(Q, v)`` counts the rows of ``Q``
with SA value ``v``. A solution removes ``r(Q, v)`` of them into the residue set ``R``
(published as one suppressed group) so that every QI-group and ``R`` are l-eligible
(§5.1); suppressed tuples are ``|R| = sum r``. With ``h'(Q, v) = h(Q, v) - r(Q, v)`` the
rows kept and ``H(Q)`` the kept pillar height::

    min  sum_{Q,v} r(Q, v)
    s.t. h'(Q, v) <= H(Q)                       for every Q, v      (pillar)
         l * H(Q) <= sum_v h'(Q, v)             for every Q         (Q l-eligible)
         l * sum_Q r(Q, v) <= sum_{Q,u} r(Q, u) for every v         (R l-eligible)
         0 <= r(Q, v) <= h(Q, v), integer

A kept part is l-eligible exactly when some ``H`` bounds every count and ``l * H`` is at
most its size, so the program is exact. Lemma 5.8 bounds every l-eligible subset of ``Q``
by the phase-one counts ``ḣ(Q, v) = min(h(Q, v), Ḣ(Q))``, where ``Ḣ(Q)`` is the largest
``H`` with ``sum_v min(h(Q, v), H) >= l * H``; the model uses this as ``r(Q, v) >=
h(Q, v) - ḣ(Q, v)``, ``H(Q) <= Ḣ(Q)``, and adds the valid cut ``sum r >= max(|Ṙ|, l * h(Ṙ))``
(Corollary 5.10 and its proof). Pairs and groups fixed by these bounds get no variable.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from republish.certificate import Certificate
from republish.errors import InputError, ParameterError
from republish.ldiversity_bounds import phase_one_heights
from republish.models.solve import certificate, check_solver_options, solve_cp_sat

__all__ = ["TupleMinimizationSolution", "pair_counts", "phase_one_bounds",
           "solve_tuple_minimization"]

STEP = "tuple-minimization"

#: ``Ḣ(Q)`` of Lemma 5.8 (:mod:`republish.ldiversity_bounds`), under its former name here.
phase_one_bounds = phase_one_heights


@dataclass(frozen=True)
class TupleMinimizationSolution:
    """Result of :func:`solve_tuple_minimization`.

    ``removed[p]`` is ``r(Q, v)`` of input pair ``p`` (``None`` without a solution);
    ``objective`` is ``sum r`` (suppressed tuples); ``bound`` the proven lower bound (the
    larger of CP-SAT's and Corollary 5.10's); ``gap`` is ``(objective - bound) /
    max(objective, 1)``.
    """

    status: str
    objective: int | None
    bound: float
    wall_time_s: float
    removed: np.ndarray | None
    variables: int

    @property
    def gap(self) -> float | None:
        return self.certificate.gap if self.objective is not None else None

    @property
    def certificate(self) -> Certificate:
        return certificate(STEP, self.status, self.objective, self.bound,
                           times={"model": self.wall_time_s},
                           detail=f"{self.variables} variables")


def pair_counts(
    groups: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (QI-group, SA value) present in the rows and their counts ``h(Q, v)``.

    Returns ``pair_group, pair_value, pair_count`` sorted by group then value, and the
    pair of every row.
    """
    groups = np.asarray(groups, dtype=np.int64)
    values = np.asarray(values, dtype=np.int64)
    m = int(values.max()) + 1 if len(values) else 1
    keys, pair_of_row, count = np.unique(groups * m + values, return_inverse=True,
                                         return_counts=True)
    return keys // m, keys % m, count.astype(np.int64), pair_of_row


def solve_tuple_minimization(
    pair_group: np.ndarray,
    pair_value: np.ndarray,
    pair_count: np.ndarray,
    l: int,  # noqa: E741
    *,
    hint_removed: np.ndarray | None = None,
    time_limit: float = 10.0,
    num_workers: int = 2,
    random_seed: int = 0,
) -> TupleMinimizationSolution:
    """Minimize the suppressed tuples ``sum r(Q, v)`` (see module docstring).

    Parameters
    ----------
    pair_group, pair_value, pair_count:
        One entry per (QI-group, SA value) pair present: group number, value code, count
        ``h(Q, v) > 0`` (see :func:`pair_counts`).
    l:
        The diversity parameter (>= 1); the counts must be l-eligible overall.
    hint_removed:
        ``r(Q, v)`` of a known solution (e.g. TP's), aligned with the pairs.
    time_limit, num_workers, random_seed:
        CP-SAT parameters ``max_time_in_seconds``, ``num_workers``, ``random_seed``.
    """
    start = time.perf_counter()
    if isinstance(l, bool) or not isinstance(l, int | np.integer) or l < 1:
        raise ParameterError(f"l must be a positive integer, got {l!r}.")
    check_solver_options(time_limit, num_workers)
    group = np.asarray(pair_group, dtype=np.int64)
    value = np.asarray(pair_value, dtype=np.int64)
    h = np.asarray(pair_count, dtype=np.int64)
    if not (len(group) == len(value) == len(h)) or (h <= 0).any():
        raise ParameterError("pair_group, pair_value, pair_count must align, counts > 0.")
    n = int(h.sum())
    m = int(value.max()) + 1 if len(value) else 1
    totals = np.bincount(value, weights=h, minlength=m).astype(np.int64)
    if n and l * int(totals.max()) > n:
        raise InputError(
            f"the counts are not {l}-eligible: SA value code {int(totals.argmax())} has "
            f"{int(totals.max())} of {n} rows; no solution exists (Lemma 1)."
        )
    n_groups = int(group.max()) + 1 if len(group) else 0
    pillar_bound = phase_one_heights(group, h, n_groups, l)
    h_dot = np.minimum(h, pillar_bound[group])
    residue_dot = np.bincount(value, weights=h - h_dot, minlength=m).astype(np.int64)
    lower_bound = max(int(residue_dot.sum()), l * int(residue_dot.max(initial=0)))

    model = cp_model.CpModel()
    # Only pairs with h_dot > 0 can keep rows; the others lose all of them.
    free = np.flatnonzero(h_dot > 0).tolist()
    r: dict[int, cp_model.IntVar] = {
        p: model.new_int_var(int(h[p] - h_dot[p]), int(h[p]), f"r_{group[p]}_{value[p]}")
        for p in free
    }
    pairs_of_group: dict[int, list[int]] = {}
    pairs_of_value: dict[int, list[int]] = {}
    for p in free:
        pairs_of_group.setdefault(int(group[p]), []).append(p)
        pairs_of_value.setdefault(int(value[p]), []).append(p)
    pillar: dict[int, cp_model.IntVar] = {}
    for g, pairs in pairs_of_group.items():
        pillar[g] = model.new_int_var(0, int(pillar_bound[g]), f"H_{g}")
        for p in pairs:
            model.add(int(h[p]) - r[p] <= pillar[g])
        model.add(l * pillar[g] <= sum(int(h[p]) - r[p] for p in pairs))
    # Rows of pairs without a variable are in R whatever the solution.
    fixed_residue = np.bincount(value, weights=np.where(h_dot > 0, 0, h), minlength=m)
    total = int(fixed_residue.sum()) + sum(r.values())
    for v in range(m):
        residue_v = int(fixed_residue[v]) + sum(r[p] for p in pairs_of_value.get(v, []))
        model.add(l * residue_v <= total)
    model.add(total >= lower_bound)
    model.minimize(total)

    hints: list[tuple[cp_model.IntVar, int]] | None = None
    if hint_removed is not None:
        hint = np.asarray(hint_removed, dtype=np.int64)
        hints = [(variable, int(np.clip(hint[p], h[p] - h_dot[p], h[p])))
                 for p, variable in r.items()]
        for g, pairs in pairs_of_group.items():
            kept = int(max(h[p] - hint[p] for p in pairs))
            hints.append((pillar[g], int(np.clip(kept, 0, pillar_bound[g]))))

    solved = solve_cp_sat(model, time_limit=time_limit, workers=num_workers, seed=random_seed,
                          hint=hints)
    wall = time.perf_counter() - start
    variables = len(r) + len(pillar)
    if not solved.found or solved.objective is None:
        return TupleMinimizationSolution(solved.status, None, float(lower_bound), wall, None,
                                         variables)
    removed = h.copy()
    for p, variable in r.items():
        removed[p] = solved.int_value(variable)
    objective = int(removed.sum())
    bound = max(float(lower_bound), solved.bound if solved.bound is not None else 0.0)
    if solved.status == "OPTIMAL":
        bound = float(objective)
    return TupleMinimizationSolution(solved.status, objective, bound, wall, removed, variables)
